// The official MCP TypeScript SDK's client through the whole OAuth flow against the Agents MCP
// server: discovery, dynamic registration, authorization code with PKCE, tools, a refresh.
// Driven by tests/mcp_server/test_typescript_sdk.py: this prints {"authorize": url} and reads
// the callback URL (after a member consented) from stdin; it prints {"result": ...} at the end.
import readline from "node:readline";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const base = process.argv[2];
const redirectUrl = "http://localhost:53682/callback";
const lines = readline.createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once("line", resolve));
const say = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

// The SDK's OAuthClientProvider, kept in memory (a desktop client keeps it on disk).
const stored = { client: undefined, tokens: undefined, verifier: undefined, url: undefined };
const provider = {
  get redirectUrl() {
    return redirectUrl;
  },
  get clientMetadata() {
    return {
      client_name: "TypeScript SDK test client",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation: () => stored.client,
  saveClientInformation: (information) => {
    stored.client = information;
  },
  tokens: () => stored.tokens,
  saveTokens: (tokens) => {
    stored.tokens = tokens;
  },
  redirectToAuthorization: (url) => {
    stored.url = url;
  },
  saveCodeVerifier: (verifier) => {
    stored.verifier = verifier;
  },
  codeVerifier: () => stored.verifier,
};

const endpoint = new URL(`${base}/mcp`);
const newClient = () => new Client({ name: "typescript-sdk-test", version: "1.0.0" });

async function connect() {
  const transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  const client = newClient();
  try {
    await client.connect(transport);
    return { client, transport };
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  say({ authorize: stored.url.toString() });
  const callback = new URL(await nextLine());
  const code = callback.searchParams.get("code");
  if (!code) throw new Error(`authorization refused: ${callback}`);
  await transport.finishAuth(code);
  const again = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  const connected = newClient();
  await connected.connect(again);
  return { client: connected, transport: again };
}

const { client, transport } = await connect();
const tools = await client.listTools();
const runs = await client.callTool({ name: "list_runs", arguments: {} });
const firstTokens = stored.tokens;
// A spoiled access token: the SDK must refresh on the 401 and retry.
stored.tokens = { ...stored.tokens, access_token: "oat_spoiled" };
const afterRefresh = await client.callTool({ name: "list_runs", arguments: {} });
say({
  result: {
    protocolVersion: transport.protocolVersion,
    tools: tools.tools.map((tool) => ({ name: tool.name, annotations: tool.annotations })),
    runs,
    afterRefresh,
    grantedScope: firstTokens.scope,
    refreshed: stored.tokens.access_token !== "oat_spoiled" && stored.tokens.access_token !== firstTokens.access_token,
  },
});
await client.close();
process.exit(0);
