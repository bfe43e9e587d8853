import { PROJECT_ID_PATTERN } from '@hcp/domain';

/** Input limits of the tenant API, in one place (README's API section quotes them). */
export const LIMITS = {
  /** RFC 1123 label: what most hypervisors and DNS accept as a machine name. */
  vmName: /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/,
  // Ids that tenants and ops choose are never the text of a missing value (MISSING_VALUE_IDS).
  zoneId: /^(?!(?:undefined|null)$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/,
  projectId: PROJECT_ID_PATTERN,
  opsId: /^(?!(?:undefined|null|NaN)$)[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/,
  tags: { maxEntries: 50, keyPattern: /^[A-Za-z0-9][A-Za-z0-9_./-]{0,62}$/, maxValueLength: 255 },
  metadata: { maxEntries: 100, keyPattern: /^[A-Za-z0-9][A-Za-z0-9_./-]{0,127}$/, maxValueLength: 1024 },
  sshKeys: {
    maxCount: 20,
    maxLength: 8192,
    pattern:
      /^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com) [A-Za-z0-9+/=]+( [^\r\n]{0,255})?$/,
  },
  userDataBytes: 64 * 1024,
  bodyBytes: 256 * 1024,
  listLimit: { min: 1, max: 200, default: 50 },
  nameFilterLength: 63,
} as const;
