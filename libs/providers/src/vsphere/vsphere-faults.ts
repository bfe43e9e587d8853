/**
 * How vim25 faults become taxonomy errors. A fault's type decides: those that follow from the
 * request, the cluster's settings or the credentials come back word for word on every try (not
 * retryable); those that come from the moment (another task on the VM, a host briefly unreachable)
 * go away by themselves and are retried within the call's deadline. The provider's own words stay in
 * `details.provider`, the one key a tenant-facing view drops; messages name no vCenter object.
 */
import { HcpError, type ErrorCode } from '@hcp/domain';
import type { SoapFault } from './soap-envelope';

export interface VsphereDetails {
  /** The vim25 fault type, e.g. InvalidArgument. */
  fault?: string;
  message?: string;
  /** The SOAP method or task that failed (never its arguments). */
  operation?: string;
  /** For transport failures: the socket / TLS error code, or the HTTP status. */
  reason?: string;
  status?: number;
}

/** A fault answered by vCenter (or a failed task), already a taxonomy error. */
export class VsphereFaultError extends HcpError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly fault: SoapFault,
    details: { provider: VsphereDetails },
    retryable?: boolean,
  ) {
    super(code, message, details, retryable);
    this.name = 'VsphereFaultError';
  }
}

/** Faults that go away by themselves: the same call may succeed a moment later. */
const TRANSIENT = new Set([
  'TaskInProgress',
  'ConcurrentAccess',
  'InvalidState',
  'HostCommunication',
  'HostNotConnected',
  'HostNotReachable',
  'NotEnoughLicenses',
  'RequestCanceled',
  'SystemError',
  'ResourceInUse',
]);

/** The object named is gone (deleted VM, stale reference). */
const MISSING = new Set(['ManagedObjectNotFound', 'NotFound']);

/** Refusals caused by what HCP sent from the tenant's request. */
const TENANT_INPUT = new Set(['InvalidArgument', 'InvalidName', 'InvalidPropertyValue']);

/**
 * Refusals caused by the provider's configuration or HCP's credentials there: the same request
 * will get them again until an operator changes something.
 */
const CONFIGURATION = new Set([
  'InvalidLogin',
  'NoPermission',
  'NotSupported',
  'InvalidDatastore',
  'InvalidDatastorePath',
  'DatastoreNotWritableOnHost',
  'FileAlreadyExists',
  'DuplicateName',
  'InsufficientResourcesFault',
  'InsufficientHostCapacityFault',
  'NotEnoughCpus',
  'VmConfigFault',
  'InvalidType',
  'InvalidRequest',
  'MethodNotFound',
  'InvalidCollectorVersion',
  'InvalidProperty',
  'AlreadyExists',
]);

export function isTransientFault(type: string): boolean {
  return TRANSIENT.has(type);
}

export function isMissingFault(type: string): boolean {
  return MISSING.has(type);
}

const SUMMARY: Record<string, string> = {
  InvalidLogin: 'the provider refused the credentials',
  NoPermission: 'the provider refused the request (permission check failed)',
  NotSupported: 'the provider does not support the operation',
  InvalidDatastore: 'the provider refused the request (its storage configuration does not allow it)',
  FileAlreadyExists: 'the provider refused the request (the VM files already exist)',
  DuplicateName: 'the provider already has a VM of that name',
  InvalidArgument: 'the provider rejected the parameters of the request',
  ManagedObjectNotFound: 'the provider has no such resource',
  NotFound: 'the provider has no such resource',
};

/** The taxonomy error of a fault answered by `operation`. */
export function faultError(fault: SoapFault, operation: string): VsphereFaultError {
  const details = { provider: { fault: fault.type, message: fault.message, operation } };
  if (fault.type === 'InvalidPowerState') {
    return new VsphereFaultError('CONFLICT', 'the VM is not in a power state that allows this', fault, details, false);
  }
  if (fault.type === 'ToolsUnavailable') {
    return new VsphereFaultError(
      'PROVIDER_UNAVAILABLE',
      'the guest tools of the VM are not running',
      fault,
      details,
      false,
    );
  }
  if (MISSING.has(fault.type)) {
    return new VsphereFaultError('NOT_FOUND', SUMMARY[fault.type] ?? 'not found', fault, details);
  }
  if (TENANT_INPUT.has(fault.type)) {
    return new VsphereFaultError(
      'INVALID_REQUEST',
      SUMMARY[fault.type] ?? 'the provider rejected the request',
      fault,
      details,
      false,
    );
  }
  if (CONFIGURATION.has(fault.type)) {
    return new VsphereFaultError(
      'PROVIDER_UNAVAILABLE',
      SUMMARY[fault.type] ?? 'the provider refused the request (its configuration does not allow it)',
      fault,
      details,
      false,
    );
  }
  // Transient faults, and faults this driver does not know: another try may well succeed.
  return new VsphereFaultError('PROVIDER_UNAVAILABLE', 'the provider failed the request', fault, details, true);
}

export function faultType(err: unknown): string | undefined {
  return err instanceof VsphereFaultError ? err.fault.type : undefined;
}

/** A provider answer HCP cannot read (not SOAP, a missing field): the provider misbehaves. */
export function badAnswer(what: string, operation = ''): HcpError {
  return new HcpError('PROVIDER_UNAVAILABLE', 'the provider gave an answer HCP cannot read', {
    provider: { operation, message: what },
  });
}
