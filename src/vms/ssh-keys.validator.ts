import { registerDecorator, type ValidationArguments, type ValidationOptions } from 'class-validator';
import { parseSshPublicKey } from '@hcp/domain';

/** What is wrong with each bad key of a list, named by its index (`ssh_keys[1] has a key ...`). */
export function sshKeyProblems(property: string, value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((line: unknown, i) => {
    const parsed = parseSshPublicKey(line);
    return parsed.ok ? [] : [`${property}[${i}] ${parsed.problem}`];
  });
}

/**
 * Every entry is an OpenSSH public key that ssh-keygen would read. Proxmox refuses a whole cloud-init
 * config over one bad key, so a bad key is refused here, before any job starts.
 */
export function IsSshPublicKeyList(options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isSshPublicKeyList',
      target: target.constructor,
      propertyName: propertyName as string,
      options: {
        message: (args: ValidationArguments) => sshKeyProblems(args.property, args.value).join('; '),
        ...options,
      },
      validator: {
        validate: (value: unknown, args?: ValidationArguments) =>
          sshKeyProblems(args?.property ?? 'ssh_keys', value).length === 0,
      },
    });
  };
}
