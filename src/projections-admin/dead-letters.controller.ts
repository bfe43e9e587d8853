import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { DEAD_LETTER_STATUSES, DeadLetterStatus } from '@hcp/projections';
import { LIMITS } from '../http/validation/limits';
import { PageQueryDto } from '../http/validation/page-query.dto';
import { UuidPipe } from '../http/validation/path-params';
import { DeadLettersService } from './dead-letters.service';

export class DeadLetterQueryDto extends PageQueryDto {
  @IsOptional() @IsString() @Matches(LIMITS.opsId) projection?: string;
  @IsOptional() @IsIn(DEAD_LETTER_STATUSES) status?: DeadLetterStatus;
}

/**
 * Events a projection could not apply (see ProjectionRunner for when an event becomes one): the list,
 * a retry through the projection now, or a skip. Both decisions are ops requests, audited as such.
 */
@Controller('v1/ops/dead-letters')
export class DeadLettersController {
  constructor(private readonly deadLetters: DeadLettersService) {}

  @Get()
  list(@Query() q: DeadLetterQueryDto) {
    return this.deadLetters.list(
      { projection: q.projection, status: q.status },
      q.limit ?? LIMITS.listLimit.default,
      q.cursor,
    );
  }

  @Post(':id/retry')
  @HttpCode(200)
  retry(@Param('id', UuidPipe) id: string) {
    return this.deadLetters.retry(id);
  }

  @Post(':id/skip')
  @HttpCode(200)
  skip(@Param('id', UuidPipe) id: string) {
    return this.deadLetters.skip(id);
  }
}
