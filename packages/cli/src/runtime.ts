import { readFileSync } from 'node:fs';
import { createHcpClient, type HcpClient } from '@hcp/client';
import { Command } from 'commander';
import { parse } from 'yaml';
import { configPath, loadConfig, readableByOthers } from './config/config-file';
import { Connection, resolveConnection } from './config/connection';
import { UsageError } from './exit-codes';
import { DisplayStream } from './progress/job-display';
import { OutputFormat, parseOutputFormat } from './output/output';

export const CLI_VERSION = '0.1.0';

/** What a run of the CLI reads and writes; tests give their own. */
export interface CliIo {
  stdout: DisplayStream;
  stderr: DisplayStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

/** The options every command takes (`hcp --help`). */
export interface GlobalOptions {
  context?: string;
  project?: string;
  output: string;
}

/** Shared by the commands of one run: the io, the config file, a client for the chosen context. */
export class CliRuntime {
  private warned = false;

  constructor(readonly io: CliIo) {}

  get configFile(): string {
    return configPath(this.io.env);
  }

  globals(cmd: Command): GlobalOptions {
    return cmd.optsWithGlobals<GlobalOptions>();
  }

  format(cmd: Command): OutputFormat {
    return parseOutputFormat(this.globals(cmd).output);
  }

  connection(cmd: Command): Connection {
    const file = this.configFile;
    if (!this.warned && readableByOthers(file)) {
      this.warned = true;
      this.io.stderr.write(`warning: ${file} is readable by others; it holds tokens (chmod 600 it)\n`);
    }
    const { context, project } = this.globals(cmd);
    return resolveConnection(loadConfig(file), { context, project }, this.io.env);
  }

  client(connection: Connection): HcpClient {
    return createHcpClient({ baseUrl: connection.url, token: connection.token, userAgent: `hcp-cli/${CLI_VERSION}` });
  }

  out(text: string): void {
    if (text) this.io.stdout.write(text);
  }

  err(text: string): void {
    this.io.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  async readStdin(): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of this.io.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
    return Buffer.concat(chunks).toString('utf8');
  }

  /** A request body from a YAML or JSON file (`-`: standard input). */
  async readBody(file: string): Promise<Record<string, unknown>> {
    let text: string;
    try {
      text = file === '-' ? await this.readStdin() : readFileSync(file, 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
    }
    let body: unknown;
    try {
      body = parse(text);
    } catch (err) {
      throw new UsageError(`${file} is neither JSON nor YAML: ${(err as Error).message}`);
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      throw new UsageError(`${file} must hold one object (the request body)`);
    return body as Record<string, unknown>;
  }
}
