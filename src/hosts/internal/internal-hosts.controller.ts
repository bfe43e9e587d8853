import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import { HcpError } from '@hcp/domain';
import { EnrollResponse, enrollRequestSchema, heartbeatSchema, type HostPrincipal } from '@hcp/host-protocol';
import { traceIdOf } from '../../http/request/request-id';
import { EnrollmentService } from '../enrollment/enrollment.service';
import { HostStore } from '../host.store';
import { CurrentHost, HostRequest } from './host.guard';
import { parseBody } from './parse-body';

/** The hosts' own side of the internal router: enrollment (with a bootstrap token) and heartbeats. */
@Controller('internal/v1')
export class InternalHostsController {
  constructor(
    private readonly enrollments: EnrollmentService,
    private readonly hosts: HostStore,
  ) {}

  /** 201 with the host's credential, shown this once (HostGuard has taken the address's budget). */
  @Post('enroll')
  enroll(@Body() body: unknown, @Req() req: HostRequest): Promise<EnrollResponse> {
    return this.enrollments.enroll(parseBody(enrollRequestSchema, body), req.ip ?? null, traceIdOf(req));
  }

  @Post('heartbeat')
  @HttpCode(204)
  async heartbeat(@Body() body: unknown, @CurrentHost() host: HostPrincipal): Promise<void> {
    const beat = parseBody(heartbeatSchema, body);
    // Revoked between the guard's check and here: refused like any revoked credential.
    if (!(await this.hosts.recordHeartbeat(host.host_id, beat)))
      throw new HcpError('UNAUTHORIZED', 'a valid host credential is required');
  }
}
