import { flagOf, SETTING_NAMES, SETTINGS } from '../config/settings.js';

const settingLines = SETTING_NAMES.map((name) => {
  const setting = SETTINGS[name];
  const def = setting.default === undefined ? '' : ` (default ${setting.default})`;
  return `  ${flagOf(name).padEnd(26)} ${name}: ${setting.help}${def}`;
}).join('\n');
export const HELP = `tool-registry: a registry where AI agents discover the tools they may use

Usage:
  tool-registry [serve] [settings]           serve the registry (the default command)
  tool-registry migrate [settings]           apply database migrations and exit
  tool-registry token --scope S [--scope S] [--sub NAME] [--ttl 1h]
                                             print a token signed with the local secret
                                             (JWT_SECRET, or the dev-mode secret file)
  tool-registry replication-key <file>       write a new 32-byte key for REPLICATION_SECRET_FILE
                                             to a new file of mode 0600 (never overwrites)
  tool-registry announcer-key <file> --subject NAME [--kid ID] [--queue Q]... [--scope S]...
                                             write a new Ed25519 private JWK for an announcer to a new
                                             file of mode 0600, and print its ANNOUNCER_KEYS_FILE binding
  tool-registry put tool/<name> [--file F]   create or replace a tool (JSON on stdin or --file)
  tool-registry put tool-service/<id> [--file F]
  tool-registry put openapi-source/<id> --document F --prefix P [--base-url U] [--file F]
                                             register an OpenAPI 3.0/3.1 document (JSON or YAML) as tools;
                                             --file gives the rest of the source as JSON (credential, filter)
  tool-registry get tool/<name> | tool-service/<id> | openapi-source/<id>
  tool-registry delete tool/<name> | tool-service/<id> | openapi-source/<id>
  tool-registry list [tools | tool-services]
  tool-registry import <file>                import {"tool-services": [...], "tools": [...]} in one transaction
                                             (or a TrustGraph config dump: tool-service and tool items)
  tool-registry export [--format trustgraph] print every live service and tool in that form (or as
                                             TrustGraph config items, tg-export-workspace-config's form)
  tool-registry review <server>              list an upstream MCP server's changes waiting for review,
                                             each as <tool>@<digest> with its diff
  tool-registry review <server> --accept T[@DIGEST] [--reject T[@DIGEST]] | --accept-all
                                             accept or reject them (a tool alone: the version pending now)
  tool-registry review openapi-source/<id> [--accept ... | --reject ... | --accept-all]
                                             the same for what re-reads of an OpenAPI source's documentUrl found
  tool-registry refresh openapi-source/<id>  read an OpenAPI source's documentUrl again now
  tool-registry deprecate tool/<name> [--sunset RFC3339] [--replacement TOOL] [--reason TEXT]
                                             deprecate a tool (calls work until the sunset)
  tool-registry undeprecate tool/<name>      lift a tool's deprecation
  tool-registry --version                    print the version

Data commands (put, get, delete, list, import, export, review, refresh, deprecate, undeprecate) talk to a running registry:
  --url URL          registry base URL (REGISTRY_URL; default http://127.0.0.1:8006)
  --token TOKEN      bearer token (REGISTRY_TOKEN; default: an admin token minted from
                     JWT_SECRET or the dev secret beside --database-path)

Settings (environment variable, or the flag, which wins):
${settingLines}
`;
