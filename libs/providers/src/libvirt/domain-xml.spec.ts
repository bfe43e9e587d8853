import { domainXml, metadataElement, parseDomainXml } from './domain-xml';

const meta = { hcp_id: 'vm-1', project_id: 'prj-<a&b>', tags: { 'team name': `Blue "Ops" & <co>`, empty: '' } };

describe('domain XML', () => {
  it('escapes every value it writes and reads the metadata back exactly', () => {
    const xml = domainXml({
      name: 'hcp-vm-1',
      metadata: meta,
      vcpus: 1,
      ram_mb: 96,
      pool: "po'ol",
      volume: 'hcp-vm-1.qcow2',
      network: 'net<1>',
      vnc_listen: '127.0.0.1',
      vnc_password: `p'"&<>`,
    });
    expect(xml).not.toContain('<a&b>');
    expect(xml).toContain("pool='po&apos;ol'");
    expect(xml).toContain("network='net&lt;1&gt;'");
    expect(xml).toContain("passwd='p&apos;&quot;&amp;&lt;&gt;'");
    expect(parseDomainXml(xml)).toEqual({ name: 'hcp-vm-1', metadata: meta });
  });

  it('reads metadata as libvirt writes it back (its own prefix and quoting)', () => {
    const fromLibvirt = `<domain type="qemu"><name>hcp-vm-1</name><metadata>
      <x:vm xmlns:x="https://hcp.dev/xmlns/libvirt/1">${metadataElement(meta)
        .replace(/^<vm>|<\/vm>$/g, '')
        .replace(/<(\/?)(id|project|tags)>/g, '<$1x:$2>')}</x:vm></metadata></domain>`;
    expect(parseDomainXml(fromLibvirt).metadata).toEqual(meta);
  });

  it('does not take a domain without HCP metadata for an HCP VM', () => {
    expect(parseDomainXml('<domain><name>web</name><metadata/></domain>').metadata).toBeNull();
  });
});
