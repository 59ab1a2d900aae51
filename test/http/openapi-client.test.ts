/**
 * The generated OpenAPI document types cleanly: a client generated from it with
 * openapi-typescript compiles under `strict`, and so does every request body the README and
 * the guides in docs/ send with curl, typed as that client types the operation's body. A
 * recursive type the generator cannot express (TS2502, as the JSON value type was), a field
 * with a server default that the client makes required, or a body field the document does not
 * know fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** Type-checks `files` (name to source) under strict settings; the diagnostics as text. */
function compile(files: Record<string, string>): string[] {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  const exists = host.fileExists.bind(host);
  host.readFile = (name) => files[name] ?? read(name);
  host.fileExists = (name) => name in files || exists(name);
  host.getSourceFile = (name, version) => {
    const text = files[name] ?? read(name);
    return text === undefined ? undefined : ts.createSourceFile(name, text, version);
  };
  const program = ts.createProgram(Object.keys(files), options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    return `${d.file?.fileName ?? ''}:${where ? where.line + 1 : 0}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

/** The words of a shell command line as the shell splits them (quotes; no expansions). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      let text = '';
      for (; line[j] !== '"'; j++) text += line[j] === '\\' ? line[++j] : line[j];
      word = (word ?? '') + text;
      i = j;
    } else if (c === '#' && word === null) break;
    else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else word = (word ?? '') + c;
  }
  if (word !== null) words.push(word);
  return words;
}

interface Example {
  where: string;
  method: string;
  url: string;
  body: string;
}

/** Every curl command with a JSON body in the ```sh blocks of `markdown`. */
function curlExamples(markdown: string, file: string): Example[] {
  const examples: Example[] = [];
  for (const block of markdown.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```/gm)) {
    const text = (block[1] as string).replace(/\\\n/g, ' ');
    // Quoted bodies span lines: join lines while a single quote is open.
    const lines: string[] = [];
    let open = '';
    for (const line of text.split('\n')) {
      open = open === '' ? line : `${open}\n${line}`;
      if ((open.match(/'/g) ?? []).length % 2 === 0) {
        lines.push(open);
        open = '';
      }
    }
    for (const line of lines) {
      const words = shellWords(line);
      const at = words.indexOf('curl');
      if (at === -1) continue;
      let method: string | undefined;
      let url = '';
      let body: string | undefined;
      for (let i = at + 1; i < words.length; i++) {
        const word = words[i] as string;
        if (word === '-X' || word === '--request') method = (words[++i] as string).toLowerCase();
        else if (word === '-d' || word === '--data' || word === '--data-raw') body = words[++i];
        else if (word === '-H' || word === '--header') i++;
        else if (/^https?:\/\//.test(word)) url = word;
      }
      // With a body and no -X, curl POSTs.
      method ??= body === undefined ? 'get' : 'post';
      if (body !== undefined) examples.push({ where: `${file}: curl -X ${method.toUpperCase()} ${url}`, method, url, body });
    }
  }
  return examples;
}

/** The document's path template for a concrete URL's path. */
function templateOf(paths: readonly string[], url: string): string | undefined {
  const path = new URL(url).pathname;
  return paths.find((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path));
}

const documents = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((name) => `docs/${name}`)].filter((name) => name.endsWith('.md'));
const examples = documents.flatMap((name) => curlExamples(readFileSync(join(ROOT, name), 'utf8'), name));
const openapi = readFileSync(join(ROOT, 'openapi.yaml'), 'utf8');
const paths = Object.keys((parseYaml(openapi) as { paths: Record<string, unknown> }).paths);

describe('a client generated from openapi.yaml with openapi-typescript', () => {
  it('finds the request bodies of the README and the guides', () => {
    expect(shellWords(`curl -d '{"a": "b c"}' -H "x: \\"y\\"" # no`)).toEqual(['curl', '-d', '{"a": "b c"}', '-H', 'x: "y"']);
    const routes = new Set(examples.map((e) => `${e.method} ${templateOf(paths, e.url)}`));
    for (const route of ['post /tools/register', 'put /tool-services/{id}', 'put /mcp-servers/{id}', 'post /tools/{name}/invoke'])
      expect(routes).toContain(route);
  });

  it('compiles under strict settings, with every curl body of the README and docs/ typed as its operation takes it', async () => {
    const schema = astToString(await openapiTS(openapi));
    expect(schema).toContain('export interface paths');
    const lines = [
      "type Body<P extends keyof paths, M extends keyof paths[P]> = NonNullable<paths[P][M] extends { requestBody?: infer R } ? R : never> extends { content: { 'application/json': infer B } } ? B : never;",
    ];
    examples.forEach((example, i) => {
      const template = templateOf(paths, example.url);
      expect(template, `${example.where}: no such path in openapi.yaml`).toBeDefined();
      // JSON is a TypeScript object literal: an unknown field fails the excess-property check.
      JSON.parse(example.body);
      lines.push(`// ${example.where}`, `export const body${i}: Body<'${template}', '${example.method}'> = ${example.body};`);
    });
    // One file: the generated client, then the examples.
    const source = `${schema}\n${lines.join('\n')}`.split('\n');
    const diagnostics = compile({ '/client/examples.ts': source.join('\n') });
    // Name the example each diagnostic is in.
    const named = diagnostics.map((d) => {
      const match = /^\/client\/examples\.ts:(\d+):/.exec(d);
      if (!match) return d;
      let n = Number(match[1]) - 1;
      while (n > 0 && !(source[n] as string).startsWith('// ')) n--;
      return `${source[n]}\n  ${d}`;
    });
    expect(named).toEqual([]);
  }, 60_000);
});
