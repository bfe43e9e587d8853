import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ProjectionsService } from './projections.service';
import { OpsIdPipe } from '../http/validation/path-params';

/** Projection positions and lag, and rebuilds beside the live tables. */
@Controller('v1/ops/projections')
export class ProjectionsController {
  constructor(private readonly projections: ProjectionsService) {}

  @Get()
  async list() {
    return { items: await this.projections.list(), next_cursor: null };
  }

  @Post(':name/rebuild')
  @HttpCode(202)
  rebuild(@Param('name', OpsIdPipe) name: string) {
    void this.projections.start(name).catch(() => undefined);
    return { name, status: 'rebuilding' };
  }
}
