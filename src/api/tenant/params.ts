import { Injectable, PipeTransform } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { invalidRequest } from '@hcp/domain';
import { LIMITS } from '../validation/limits';

/** Resource ids in paths are UUIDs; anything else is INVALID_REQUEST, not a database error. */
@Injectable()
export class UuidPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!isUUID(value)) throw invalidRequest('id must be a UUID');
    return value.toLowerCase();
  }
}

@Injectable()
export class ProjectIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!LIMITS.projectId.test(value)) throw invalidRequest('project_id is not valid');
    return value;
  }
}
