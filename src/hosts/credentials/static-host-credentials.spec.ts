import { parseStaticHostCredentials } from './static-host-credentials';

const hex = (c: string) => c.repeat(64);

describe('configured host credentials (HCP_STATIC_HOST_CREDENTIALS)', () => {
  it('reads cluster, identity and digest of each entry, digests in lower case', () => {
    expect(parseStaticHostCredentials(` c-1/kvm-1.lab=sha256:${hex('A')} , c-2/kvm-2=sha256:${hex('b')}`)).toEqual([
      { cluster_id: 'c-1', identity: 'kvm-1.lab', digest: hex('a') },
      { cluster_id: 'c-2', identity: 'kvm-2', digest: hex('b') },
    ]);
    expect(parseStaticHostCredentials('')).toEqual([]);
  });

  it('refuses an entry that is not a digest, naming its place and not its text', () => {
    expect(() => parseStaticHostCredentials(`c-1/kvm=sha256:${hex('a')},c-1/kvm2=the-credential-itself`)).toThrow(
      /^entry 2 is not/,
    );
    expect(() => parseStaticHostCredentials('c-1/kvm=sha256:abc')).toThrow(/entry 1/);
    expect(() => parseStaticHostCredentials(`kvm=sha256:${hex('a')}`)).toThrow(/entry 1/);
  });

  it('refuses two entries for one host or with one digest', () => {
    expect(() => parseStaticHostCredentials(`c/a=sha256:${hex('a')},c/b=sha256:${hex('a')}`)).toThrow(
      /same credential/,
    );
    expect(() => parseStaticHostCredentials(`c/a=sha256:${hex('a')},c/a=sha256:${hex('b')}`)).toThrow(/same host/);
  });
});
