import { Controller, Get, Res } from '@nestjs/common';
import { PrometheusController } from '@willsoto/nestjs-prometheus';
import type { HttpReply as Response } from '../../http/edge/http-types';

/** Prometheus text at /metrics (no token: scraped from inside the network). */
@Controller('metrics')
export class MetricsController extends PrometheusController {
  @Get()
  override async index(@Res({ passthrough: true }) response: Response): Promise<string> {
    return super.index(response);
  }
}
