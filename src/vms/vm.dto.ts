import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  MaxLength,
} from 'class-validator';
import { IsBase64Within, IsStringMap } from '../http/validation/string-map.validator';
import { LIMITS } from '../http/validation/limits';
import { PageQueryDto } from '../http/validation/page-query.dto';
import { IsSshPublicKeyList } from './ssh-keys.validator';
import type { CreateVmInput } from './commands/create-vm.handler';

const VM_STATUSES = [
  'provisioning',
  'starting',
  'running',
  'stopping',
  'stopped',
  'rebooting',
  'deleting',
  'deleted',
  'error',
] as const;

export class CreateVmDto implements CreateVmInput {
  @IsString()
  @Matches(LIMITS.vmName, {
    message: 'name must be 1-63 letters, digits or hyphens, not starting or ending with a hyphen',
  })
  name!: string;

  @IsString()
  @Matches(LIMITS.zoneId)
  zone!: string;

  @IsUUID() image_id!: string;
  @IsUUID() flavor_id!: string;

  @IsOptional()
  @IsStringMap(LIMITS.tags)
  tags?: Record<string, string>;

  @IsOptional()
  @IsStringMap(LIMITS.metadata)
  metadata?: Record<string, string>;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(LIMITS.sshKeys.maxCount)
  @IsString({ each: true })
  @MaxLength(LIMITS.sshKeys.maxLength, { each: true })
  @IsSshPublicKeyList()
  ssh_keys?: string[];

  @IsOptional()
  @IsBase64Within(LIMITS.userDataBytes)
  user_data?: string;

  @IsOptional()
  @IsBoolean()
  power_on?: boolean;
}

export class UpdateVmDto {
  @IsOptional()
  @IsStringMap(LIMITS.tags)
  tags?: Record<string, string>;

  @IsOptional()
  @IsStringMap(LIMITS.metadata)
  metadata?: Record<string, string>;
}

export class VmActionDto {
  @IsOptional()
  @IsBoolean()
  force?: boolean;
}

export class ListVmsQueryDto extends PageQueryDto {
  @IsOptional()
  @IsString()
  @Matches(LIMITS.zoneId)
  zone?: string;

  @IsOptional()
  @IsIn(VM_STATUSES)
  status?: (typeof VM_STATUSES)[number];

  /** `key:value`; may be given several times (all must match). */
  @IsOptional()
  @Transform(({ value }) => (Array.isArray(value) ? value : [value]))
  @IsArray()
  @ArrayMaxSize(10)
  @IsString({ each: true })
  @Matches(/^[A-Za-z0-9][A-Za-z0-9_./-]{0,62}:.{0,255}$/s, { each: true, message: 'tag must be key:value' })
  tag?: string[];

  @IsOptional()
  @IsString()
  @MaxLength(LIMITS.nameFilterLength)
  name?: string;
}
