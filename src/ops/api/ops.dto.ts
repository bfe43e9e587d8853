import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { PROVIDER_TYPES, ProviderType } from '@hcp/domain';
import { LIMITS } from '../../http/validation/limits';
import { IsBoundedObject, IsStringMap } from '../../http/validation/string-map.validator';

const NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,62}$/;
const NAME_MESSAGE = 'name must be 1-63 letters, digits, spaces, dots, dashes or underscores';

/** TLS of a provider endpoint: a CA bundle to trust, or a pinned certificate; never "insecure". */
export class TlsDto {
  @IsOptional()
  @IsString()
  @MaxLength(65_536)
  @Matches(/-----BEGIN CERTIFICATE-----/, { message: 'ca_pem must hold PEM certificates' })
  ca_pem?: string;

  @IsOptional()
  @IsString()
  @Matches(/^([0-9A-Fa-f]{2}:){31}[0-9A-Fa-f]{2}$|^[0-9A-Fa-f]{64}$/, {
    message: 'fingerprint_sha256 must be a SHA-256 fingerprint (hex, with or without colons)',
  })
  fingerprint_sha256?: string;
}

export class CapacityDto {
  @IsInt() @Min(0) @Max(1_000_000) vcpus!: number;
  @IsInt() @Min(0) @Max(1_000_000_000) ram_mb!: number;
  @IsInt() @Min(0) @Max(1_000_000_000) disk_gb!: number;
}

export class CreateProviderDto {
  @IsString() @Matches(NAME, { message: NAME_MESSAGE }) name!: string;
  @IsIn(PROVIDER_TYPES) type!: ProviderType;
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['https', 'http'], require_protocol: true })
  @MaxLength(2048)
  endpoint?: string;
  /** Write-only: sealed at rest, never returned, never logged. */
  @IsOptional() @IsBoundedObject() credentials?: Record<string, unknown>;
  @IsOptional() @ValidateNested() @Type(() => TlsDto) tls?: TlsDto;
  @IsOptional() @IsBoundedObject() settings?: Record<string, unknown>;
}

export class UpdateProviderDto {
  @IsOptional() @IsString() @Matches(NAME, { message: NAME_MESSAGE }) name?: string;
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['https', 'http'], require_protocol: true })
  @MaxLength(2048)
  endpoint?: string;
  @IsOptional() @IsBoundedObject() credentials?: Record<string, unknown>;
  @IsOptional() @ValidateNested() @Type(() => TlsDto) tls?: TlsDto;
  @IsOptional() @IsBoundedObject() settings?: Record<string, unknown>;
}

export class CreateClusterDto {
  @IsString() @Matches(NAME, { message: NAME_MESSAGE }) name!: string;
  @IsString() @Matches(LIMITS.opsId, { message: 'provider_id is not valid' }) provider_id!: string;
  @IsOptional() @IsBoundedObject() placement_hints?: Record<string, unknown>;
  @IsOptional() @ValidateNested() @Type(() => CapacityDto) capacity?: CapacityDto;
  @IsOptional() @IsBoolean() enabled?: boolean;
  /** Narrowing of the driver's capabilities, e.g. `{ "snapshots": false, "console_types": ["vnc"] }`. */
  @IsOptional() @IsBoundedObject() capabilities?: Record<string, unknown>;
}

export class UpdateClusterDto {
  @IsOptional() @IsString() @Matches(NAME, { message: NAME_MESSAGE }) name?: string;
  @IsOptional() @IsBoundedObject() placement_hints?: Record<string, unknown>;
  @IsOptional() @ValidateNested() @Type(() => CapacityDto) capacity?: CapacityDto;
  @IsOptional() @IsBoolean() enabled?: boolean;
  @IsOptional() @IsBoundedObject() capabilities?: Record<string, unknown>;
}

export class ZoneBodyDto {
  @IsString() @Matches(NAME, { message: NAME_MESSAGE }) name!: string;
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @Matches(LIMITS.opsId, { each: true, message: 'each of cluster_ids must be a cluster id' })
  cluster_ids!: string[];
  @IsIn(['spread', 'pack']) policy!: 'spread' | 'pack';
}

export class CreateZoneDto extends ZoneBodyDto {
  @IsString()
  @Matches(LIMITS.zoneId, { message: 'id must be a DNS label (lower-case letters, digits, dashes)' })
  id!: string;
}

export class CreateImageDto {
  @IsString() @Matches(NAME, { message: NAME_MESSAGE }) name!: string;
  @IsString() @MaxLength(63) os!: string;
  @IsInt() @Min(0) @Max(1_000_000) min_disk_gb!: number;
  @IsInt() @Min(0) @Max(100_000_000) min_ram_mb!: number;
  @IsIn(['public', 'private']) visibility!: 'public' | 'private';
  @IsStringMap({ maxEntries: 200, keyPattern: /^[A-Za-z0-9._:-]{1,64}$/, maxValueLength: 512 }) provider_refs!: Record<
    string,
    string
  >;
}

export class UpdateImageDto {
  @IsOptional() @IsString() @Matches(NAME, { message: NAME_MESSAGE }) name?: string;
  @IsOptional() @IsString() @MaxLength(63) os?: string;
  @IsOptional() @IsInt() @Min(0) @Max(1_000_000) min_disk_gb?: number;
  @IsOptional() @IsInt() @Min(0) @Max(100_000_000) min_ram_mb?: number;
  @IsOptional() @IsIn(['public', 'private']) visibility?: 'public' | 'private';
  @IsOptional()
  @IsStringMap({ maxEntries: 200, keyPattern: /^[A-Za-z0-9._:-]{1,64}$/, maxValueLength: 512 })
  provider_refs?: Record<string, string>;
}

export class CreateFlavorDto {
  @IsString() @Matches(NAME, { message: NAME_MESSAGE }) name!: string;
  @IsInt() @Min(1) @Max(1024) vcpus!: number;
  @IsInt() @Min(64) @Max(16_777_216) ram_mb!: number;
  @IsInt() @Min(1) @Max(1_000_000) disk_gb!: number;
  @IsOptional() @IsBoundedObject() extras?: Record<string, unknown>;
}

export class UpdateFlavorDto {
  @IsOptional() @IsString() @Matches(NAME, { message: NAME_MESSAGE }) name?: string;
  @IsOptional() @IsInt() @Min(1) @Max(1024) vcpus?: number;
  @IsOptional() @IsInt() @Min(64) @Max(16_777_216) ram_mb?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000) disk_gb?: number;
  @IsOptional() @IsBoundedObject() extras?: Record<string, unknown>;
}
