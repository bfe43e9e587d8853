import { Command, CommanderError, Option } from 'commander';
import { opsCommands } from './commands/ops';
import { sessionCommands } from './commands/session';
import { vmCommands } from './commands/vms';
import { describeError, EXIT, EXIT_CODES_HELP, type ExitCode, exitCodeOf, OutcomeError } from './exit-codes';
import { OUTPUT_FORMATS } from './output/output';
import { CLI_VERSION, type CliIo, CliRuntime } from './runtime';

const ENVIRONMENT_HELP = `
Environment:
  HCP_CONFIG    config file (default ~/.config/hcp/config.yaml, written 0600)
  HCP_CONTEXT   context to use instead of the current one
  HCP_URL, HCP_TOKEN, HCP_PROJECT
                override the context's address, token and project (no config file needed)

Getting started:
  hcp login --url http://localhost:8080 --token "$(npm run -s token -- --sub me --project demo:admin)"
  hcp vms create web-1 --image debian-12 --flavor small --wait
  hcp vms list
`;

/** The whole command tree of `hcp`, writing to the given io. */
export function buildProgram(rt: CliRuntime): Command {
  const program = new Command('hcp')
    .description('Command line for HCP, the Hypervisor Control Plane')
    .version(CLI_VERSION)
    .option('--context <name>', 'context of the config file to use (hcp context list)')
    .option('-p, --project <id>', "project to work in (default: the context's)")
    .addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table'))
    .showHelpAfterError('(hcp --help lists the commands)')
    .addHelpText('after', `${EXIT_CODES_HELP}${ENVIRONMENT_HELP}`)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => rt.io.stdout.write(text),
      writeErr: (text) => rt.io.stderr.write(text),
    });
  sessionCommands(program, rt);
  vmCommands(program, rt);
  opsCommands(program, rt);
  program.on('command:*', ([name]: string[]) => {
    // The admin commands that run beside HCP's database were `npm run hcp -- ...` before this CLI.
    if (['migrate', 'secrets'].includes(name))
      rt.err(`"${name}" runs beside HCP's database: npm run admin -- ${name} ...`);
  });
  return program;
}

/** Runs one command line (without node and the script) and answers its exit code; never throws. */
export async function runCli(argv: string[], io: CliIo): Promise<ExitCode> {
  const rt = new CliRuntime(io);
  const program = buildProgram(rt);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0)
        return EXIT.OK;
      return EXIT.USAGE;
    }
    const code = exitCodeOf(err);
    // A job's outcome was already shown by its final line.
    if (!(err instanceof OutcomeError)) rt.err(`error: ${describeError(err)}`);
    if (code === EXIT.INTERNAL && err instanceof Error && err.stack && io.env.HCP_DEBUG) rt.err(err.stack);
    return code;
  }
}
