/**
 * vim25 calls with a session: `Login` once (the `vmware_soap_session` cookie kept), a second login
 * when a call answers NotAuthenticated (the session expired on vCenter) and that call once more,
 * `Logout` on close. Transient faults, connection failures and 5xx answers are tried again with
 * backoff within the call's deadline: every call HCP makes is a read, or starts a task whose
 * repetition the driver recognises (DuplicateName, a VM already in the target power state, a VM
 * already gone).
 */
import { HcpError } from '@hcp/domain';
import { checkCall } from '../common/call-errors';
import type { TlsTrust } from '../common/https/tls-trust';
import { TryFailure, failureToError } from '../common/https/try-failure';
import { RetryBackoff } from '../common/retry';
import type { CallContext } from '../spi/provider-driver';
import {
  type MoRef,
  type SoapFields,
  type XmlNode,
  child,
  moref,
  morefOf,
  parseSoapAnswer,
  requestEnvelope,
  SoapEncodingError,
  SoapParseError,
} from './soap-envelope';
import { VsphereFaultError, badAnswer, faultError, isTransientFault } from './vsphere-faults';
import { SoapHttp, sessionCookie } from './vsphere-http';

export interface VsphereCredentials {
  username: string;
  password: string;
}

export interface VsphereClientOptions {
  endpoint: URL;
  credentials: VsphereCredentials;
  tls: TlsTrust;
  connectTimeoutMs?: number;
  requestTimeoutMs?: number;
  maxAttempts?: number;
  retryBaseMs?: number;
  maxBodyBytes?: number;
}

/** The managed objects a session starts from (ServiceContent). */
export interface ServiceContent {
  rootFolder: MoRef;
  propertyCollector: MoRef;
  viewManager: MoRef;
  searchIndex: MoRef;
  sessionManager: MoRef;
}

const SERVICE_INSTANCE = moref('ServiceInstance', 'ServiceInstance');

export class VsphereClient {
  readonly stats = { requests: 0, retries: 0, logins: 0 };
  private readonly http: SoapHttp;
  private readonly retry: RetryBackoff;
  private cookie: string | undefined;
  private content: ServiceContent | undefined;
  private loggingIn: Promise<void> | undefined;

  constructor(private readonly options: VsphereClientOptions) {
    this.http = new SoapHttp({
      endpoint: options.endpoint,
      tls: options.tls,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      requestTimeoutMs: options.requestTimeoutMs ?? 60_000,
      maxBodyBytes: options.maxBodyBytes ?? 64 * 1024 * 1024,
      now: Date.now,
      stats: this.stats,
    });
    this.retry = new RetryBackoff({
      maxAttempts: options.maxAttempts ?? 4,
      retryBaseMs: options.retryBaseMs ?? 250,
      now: Date.now,
      random: Math.random,
      stats: this.stats,
    });
  }

  /** ServiceContent of the current session, logging in first when there is none. */
  async serviceContent(ctx: CallContext): Promise<ServiceContent> {
    await this.ensureSession(ctx);
    if (!this.content) throw badAnswer('service content', 'RetrieveServiceContent');
    return this.content;
  }

  /** One vim25 method on `self`; answers its `returnval` (undefined for void methods). */
  async call(
    method: string,
    self: MoRef,
    args: SoapFields,
    ctx: CallContext,
  ): Promise<XmlNode | XmlNode[] | undefined> {
    await this.ensureSession(ctx);
    let relogged = false;
    for (let attempt = 1; ; attempt++) {
      const cookie = this.cookie;
      try {
        return await this.invoke(method, self, args, cookie, ctx);
      } catch (err) {
        if (err instanceof VsphereFaultError && err.fault.type === 'NotAuthenticated' && !relogged) {
          relogged = true;
          await this.relogin(cookie, ctx);
          continue;
        }
        if (worthAnotherTry(err) && (await this.retry.tryAgain(attempt, ctx))) continue;
        throw err;
      }
    }
  }

  /** Reaches vCenter and logs in (again): what checkConnectivity proves. */
  async currentTime(ctx: CallContext): Promise<string> {
    const answer = await this.call('CurrentTime', SERVICE_INSTANCE, {}, ctx);
    if (typeof answer !== 'string') throw badAnswer('current time', 'CurrentTime');
    return answer;
  }

  async close(): Promise<void> {
    const cookie = this.cookie;
    const content = this.content;
    this.cookie = undefined;
    if (cookie && content) {
      const ctx: CallContext = { deadline: new Date(Date.now() + 5000), signal: new AbortController().signal };
      try {
        await this.invoke('Logout', content.sessionManager, {}, cookie, ctx);
      } catch {
        // The session ends on vCenter by itself after its idle timeout.
      }
    }
    this.http.close();
  }

  private async ensureSession(ctx: CallContext): Promise<void> {
    if (this.cookie && this.content) return;
    await this.relogin(undefined, ctx);
  }

  /** One login for every call that found the session `stale` (or none). */
  private async relogin(stale: string | undefined, ctx: CallContext): Promise<void> {
    if (this.cookie !== stale && this.cookie) return;
    if (!this.loggingIn) {
      this.loggingIn = this.login(ctx).finally(() => {
        this.loggingIn = undefined;
      });
    }
    await this.loggingIn;
  }

  private async login(ctx: CallContext): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const content = serviceContentOf(
          await this.invoke('RetrieveServiceContent', SERVICE_INSTANCE, {}, undefined, ctx),
        );
        this.stats.logins++;
        const { answer, setCookie } = await this.invokeWithCookies(
          'Login',
          content.sessionManager,
          { userName: this.options.credentials.username, password: this.options.credentials.password },
          undefined,
          ctx,
        );
        const cookie = sessionCookie(setCookie);
        if (!cookie || answer === undefined) throw badAnswer('session cookie', 'Login');
        this.cookie = cookie;
        this.content = content;
        return;
      } catch (err) {
        if (worthAnotherTry(err) && (await this.retry.tryAgain(attempt, ctx))) continue;
        throw err;
      }
    }
  }

  private async invoke(
    method: string,
    self: MoRef,
    args: SoapFields,
    cookie: string | undefined,
    ctx: CallContext,
  ): Promise<XmlNode | XmlNode[] | undefined> {
    return (await this.invokeWithCookies(method, self, args, cookie, ctx)).answer;
  }

  /** One exchange, its outcome as a value or a taxonomy error. */
  private async invokeWithCookies(
    method: string,
    self: MoRef,
    args: SoapFields,
    cookie: string | undefined,
    ctx: CallContext,
  ): Promise<{ answer: XmlNode | XmlNode[] | undefined; setCookie: string[] }> {
    checkCall(ctx, method, Date.now);
    let envelope: string;
    try {
      envelope = requestEnvelope(method, self, args);
    } catch (err) {
      if (err instanceof SoapEncodingError)
        throw new HcpError('INVALID_REQUEST', 'the request holds text the provider cannot carry');
      throw err;
    }
    let raw: Awaited<ReturnType<SoapHttp['post']>>;
    try {
      raw = await this.http.post(envelope, cookie, ctx);
    } catch (err) {
      if (err instanceof TryFailure) throw failureToError(err, method, ctx, Date.now);
      throw err;
    }
    let parsed: ReturnType<typeof parseSoapAnswer> | undefined;
    try {
      parsed = raw.text.trim() ? parseSoapAnswer(raw.text, method) : undefined;
    } catch (err) {
      if (!(err instanceof SoapParseError)) throw err;
    }
    if (parsed?.kind === 'fault') throw faultError(parsed.fault, method);
    if (raw.status < 200 || raw.status >= 300 || !parsed) throw statusError(raw.status, method);
    return { answer: parsed.returnval, setCookie: raw.setCookie };
  }
}

/**
 * Transient faults and failures of the connection or of a vCenter service; not faults this driver
 * does not know (the job's own retries cover those) nor ones it interprets (InvalidPowerState, ...).
 */
function worthAnotherTry(err: unknown): boolean {
  if (err instanceof VsphereFaultError) return isTransientFault(err.fault.type);
  return err instanceof HcpError && err.retryable && err.code === 'PROVIDER_UNAVAILABLE';
}

/** An HTTP answer without a SOAP envelope: a proxy or a vCenter service that is down. */
function statusError(status: number, operation: string): HcpError {
  const details = { provider: { status, operation } };
  if (status === 401 || status === 403) {
    return new HcpError('PROVIDER_UNAVAILABLE', 'the provider refused the credentials', details, false);
  }
  if (status === 404) {
    // No /sdk at this address: the endpoint is not a vCenter, and will not become one.
    return new HcpError('PROVIDER_UNAVAILABLE', 'the provider endpoint does not serve the vSphere API', details, false);
  }
  return new HcpError('PROVIDER_UNAVAILABLE', 'the provider failed the request', details, true);
}

function serviceContentOf(node: unknown): ServiceContent {
  const ref = (name: string): MoRef => {
    const r = morefOf(child(node, name));
    if (!r) throw badAnswer(`service content without ${name}`, 'RetrieveServiceContent');
    return r;
  };
  return {
    rootFolder: ref('rootFolder'),
    propertyCollector: ref('propertyCollector'),
    viewManager: ref('viewManager'),
    searchIndex: ref('searchIndex'),
    sessionManager: ref('sessionManager'),
  };
}
