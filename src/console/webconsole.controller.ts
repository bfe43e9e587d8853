import { Controller, Get, Param, Res } from '@nestjs/common';
import type { HttpReply as Response } from '../http/edge/http-types';
import { UuidPipe } from '../http/validation/path-params';
import { webconsolePage } from './webconsole-assets';

/**
 * The webconsole page. Public on purpose: it holds nothing but a VNC client, and the session's token
 * (in the URL fragment, never sent here) is what opens the console.
 */
@Controller('console')
export class WebconsoleController {
  private readonly page = webconsolePage();

  @Get(':session_id')
  show(@Param('session_id', UuidPipe) _sessionId: string, @Res({ passthrough: true }) res: Response): string {
    // Set here, not with @Header: a refused id must still answer the JSON error envelope.
    res.type('text/html; charset=utf-8');
    return this.page;
  }
}
