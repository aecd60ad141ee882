// A CLI verb that lives in a file of its own (src/cli/<verb>.ts) and is registered with one line in
// main.ts. main.ts hands each verb the shared pieces (option parsing, the saved file, output), so a
// verb file never imports main.ts.
import type { ParseArgsConfig } from 'node:util';
import type { CreateAddressResponse } from '@return-address/client';

export type Saved = CreateAddressResponse & { cursor: number };

type Options = NonNullable<ParseArgsConfig['options']>;

export interface VerbKit {
  /** Parses `args` with the common options (--url, --save, --help) and these; a bad option is a usage error. */
  parse<O extends Options>(
    args: string[],
    options: O,
    positionals?: boolean,
  ): {
    values: { url?: string; save?: string; help?: boolean } & Record<keyof O, unknown>;
    positionals: string[];
  };
  /** The file `create --save` wrote; a usage error when missing or not one. */
  loadSaved(file: string | undefined): Saved;
  /** Prints a JSON result on stdout (the service's own text when it came from the service). */
  out(value: unknown): void;
  /** An error that prints `return-address: <message>` and exits 1, without a stack. */
  usage(message: string): Error;
}

export interface CliVerb {
  /** One line for `return-address --help`. */
  summary: string;
  /** The whole `return-address <verb> --help` text. */
  help: string;
  /** Runs the verb; resolves to the exit code (-1: keeps running until a signal). */
  run(args: string[], kit: VerbKit): Promise<number>;
}
