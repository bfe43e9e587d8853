import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { IsIn, IsISO8601, IsOptional, IsString, Matches } from 'class-validator';
import { invalidField } from '@hcp/domain';
import { LIMITS } from '../http/validation/limits';
import { UsageQueries } from './usage.queries';

/** RFC 3339 date-time: a time and an offset are required (a date alone would leave the day's start to guess). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const MAX_DAYS = 366;
const DAY_MS = 86_400_000;

export class UsageQueryDto {
  @IsOptional() @IsString() @Matches(LIMITS.projectId) project?: string;
  @IsString()
  @IsISO8601({ strict: true })
  @Matches(RFC3339, { message: 'from must be an RFC 3339 date-time' })
  from!: string;
  @IsString()
  @IsISO8601({ strict: true })
  @Matches(RFC3339, { message: 'to must be an RFC 3339 date-time' })
  to!: string;
  @IsOptional() @IsIn(['vm']) detail?: 'vm';
}

const seconds = { type: 'number', description: 'to the millisecond' };
const hours = { type: 'number', description: 'rounded to 6 decimals' };
const FIGURES = {
  running_seconds: seconds,
  powered_off_seconds: seconds,
  vm_hours: { ...hours, description: 'running hours; rounded to 6 decimals' },
  vcpu_hours: { ...hours, description: 'vCPUs × running hours; rounded to 6 decimals' },
  gib_hours: { ...hours, description: 'memory GiB × running hours; rounded to 6 decimals' },
  powered_off_hours: hours,
};
const object = (properties: Record<string, object>) => ({
  type: 'object' as const,
  required: Object.keys(properties),
  properties,
});
const str = { type: 'string' };
const time = { type: 'string', format: 'date-time' };

const GROUP = object({ project_id: str, zone: str, flavor_id: str, vms: { type: 'integer' }, ...FIGURES });
const VM_LINE = object({
  vm_id: str,
  project_id: str,
  zone: str,
  flavor_id: str,
  vcpus: { type: 'integer' },
  ram_mb: { type: 'integer' },
  ...FIGURES,
});

/** The answer's shape: stable, the CLI (`hcp usage`) and billing read it. */
const USAGE_REPORT = {
  type: 'object' as const,
  required: ['project', 'from', 'to', 'measured_until', 'groups', 'totals'],
  properties: {
    project: { type: 'string', nullable: true, description: 'the project asked for; null: all projects' },
    from: time,
    to: time,
    measured_until: { ...time, description: 'to, or the time of the answer when to is still ahead' },
    groups: { type: 'array', description: 'one per project, zone and flavor with time in the period', items: GROUP },
    totals: object({ vms: { type: 'integer' }, ...FIGURES }),
    vms: {
      type: 'array',
      description: 'with detail=vm: one line per VM (and flavor, were it resized)',
      items: VM_LINE,
    },
  },
};

/**
 * Usage of a period for billing, computed from the metering records (the same ones `hcp.metering.v1`
 * carries) by the domain's calculator (`computeUsage`, which defines when a VM costs).
 */
@Controller('v1/ops/usage')
export class UsageController {
  constructor(private readonly usage: UsageQueries) {}

  @Get()
  @ApiOperation({
    summary: 'Usage of a period: VM-hours, vCPU-hours, GiB-hours and powered-off hours by project, zone and flavor',
    description: [
      'Computed from the metering records (GET /v1/ops/metering, Kafka hcp.metering.v1); a billing consumer of the',
      'topic that de-duplicates by event_id computes the same figures.',
      'A VM costs from `vm.allocated` (the provider made it; a create that never succeeded costs nothing) to',
      '`vm.deleted` (the provider deleted it; a delete request alone changes nothing). It is running from',
      '`vm.powered_on` to the next `vm.powered_off` or `vm.deleted`, and powered off otherwise (a stopped VM, or',
      'one the provider lost, until it is deleted). Time is clipped to [from, to): a VM created or deleted inside',
      'the period counts its time inside it. Periods: from < to, at most 366 days; a period not over yet is',
      'counted until now (`measured_until`). Records the metering projection has not applied yet',
      '(GET /v1/ops/projections) are not counted.',
    ].join(' '),
  })
  @ApiOkResponse({ description: 'the usage of the period', schema: USAGE_REPORT })
  report(@Query() q: UsageQueryDto) {
    const from = new Date(q.from);
    const to = new Date(q.to);
    if (Number.isNaN(from.getTime())) throw invalidField('from', 'from must be an RFC 3339 date-time');
    if (Number.isNaN(to.getTime())) throw invalidField('to', 'to must be an RFC 3339 date-time');
    if (to <= from) throw invalidField('to', 'to must be after from');
    if (to.getTime() - from.getTime() > MAX_DAYS * DAY_MS)
      throw invalidField('to', `a period is at most ${MAX_DAYS} days`);
    return this.usage.report({ project: q.project, from, to, detail: q.detail === 'vm' });
  }
}
