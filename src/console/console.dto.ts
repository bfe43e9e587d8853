import { IsIn } from 'class-validator';
import { CONSOLE_TYPES, ConsoleType } from '@hcp/domain';

export class OpenConsoleDto {
  @IsIn(CONSOLE_TYPES)
  type!: ConsoleType;
}
