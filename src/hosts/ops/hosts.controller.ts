import { Body, Controller, Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import type { HttpRequest as Request } from '../../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { CurrentPrincipal } from '../../http/auth/access.guard';
import { traceIdOf } from '../../http/request/request-id';
import { OpsIdPipe, UuidPipe } from '../../http/validation/path-params';
import { CreatedEnrollment, ENROLLMENT_TTL_DEFAULT_S, EnrollmentService } from '../enrollment/enrollment.service';
import { HostAdmin } from './host-admin.service';
import { HostView } from './host.presenter';
import { CreateEnrollmentDto, ListHostsQueryDto } from './hosts.dto';

/** Bootstrap tokens for a cluster's hosts: 201 with the token, shown this once. */
@Controller('v1/ops/clusters')
export class HostEnrollmentsController {
  constructor(private readonly enrollments: EnrollmentService) {}

  @Post(':id/enrollments')
  create(
    @Param('id', OpsIdPipe) clusterId: string,
    @Body() body: CreateEnrollmentDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ): Promise<CreatedEnrollment> {
    return this.enrollments.create(clusterId, body.expires_in_s ?? ENROLLMENT_TTL_DEFAULT_S, who.sub, traceIdOf(req));
  }
}

/** The hosts of agent clusters: read, revoke, rotate their credential. */
@Controller('v1/ops/hosts')
export class HostsController {
  constructor(private readonly hosts: HostAdmin) {}

  @Get()
  list(@Query() q: ListHostsQueryDto) {
    return this.hosts.list(q.cluster_id);
  }

  @Get(':id')
  get(@Param('id', UuidPipe) id: string): Promise<HostView> {
    return this.hosts.get(id);
  }

  @Post(':id/revoke')
  @HttpCode(200)
  revoke(@Param('id', UuidPipe) id: string, @CurrentPrincipal() who: Principal, @Req() req: Request) {
    return this.hosts.revoke(id, who.sub, traceIdOf(req));
  }

  /** 200 with the new credential, shown this once; the old one stops working with this answer. */
  @Post(':id/rotate')
  @HttpCode(200)
  rotate(@Param('id', UuidPipe) id: string, @CurrentPrincipal() who: Principal, @Req() req: Request) {
    return this.hosts.rotate(id, who.sub, traceIdOf(req));
  }
}
