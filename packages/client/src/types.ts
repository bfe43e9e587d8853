// HCP's resources by the names docs/API.md gives them, from the generated schema.
import type { components } from './schema';

type Schemas = components['schemas'];

export type ErrorCode = Schemas['ErrorCode'];
export type ErrorEnvelope = Schemas['ErrorEnvelope'];
/** A 202 answer: the resource a job works on and the job. */
export type JobAccepted = Schemas['JobAccepted'];

export type Vm = Schemas['Vm'];
export type VmStatus = Vm['status'];
export type Job = Schemas['Job'];
export type JobStatus = Job['status'];
export type JobType = Job['type'];
export type Quota = Schemas['Quota'];
export type ConsoleSession = Schemas['ConsoleSession'];
export type Capabilities = Schemas['Capabilities'];
export type Zone = Schemas['Zone'];
export type Image = Schemas['Image'];
export type Flavor = Schemas['Flavor'];

export type Provider = Schemas['Provider'];
export type ProviderHealth = Schemas['ProviderHealth'];
export type Cluster = Schemas['Cluster'];
export type OpsZone = Schemas['OpsZone'];
export type OpsImage = Schemas['OpsImage'];
export type OpsFlavor = Schemas['OpsFlavor'];
export type AuditRecord = Schemas['AuditRecord'];
export type MeteringRecord = Schemas['MeteringRecord'];
export type Projection = Schemas['Projection'];
export type DeadLetter = Schemas['DeadLetter'];
export type Orphan = Schemas['Orphan'];
export type Enrollment = Schemas['Enrollment'];
export type Host = Schemas['Host'];
export type HostCredential = Schemas['HostCredential'];

// Request bodies.
export type CreateVmRequest = Schemas['CreateVmDto'];
export type UpdateVmRequest = Schemas['UpdateVmDto'];
export type VmActionRequest = Schemas['VmActionDto'];
export type OpenConsoleRequest = Schemas['OpenConsoleDto'];
export type SetQuotaRequest = Schemas['SetQuotaDto'];
