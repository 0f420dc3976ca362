// An MCP host's side, on the official TypeScript SDK's client: connects
// to workqueue over stdio (`workqueue mcp`) and over Streamable HTTP
// (/mcp), lists the tools (the SDK validates every schema), calls a read
// tool, a write tool and an invalid call, and connects with a bad token.
// Run by scripts/interop from the directory the SDK is installed in.
//
//   node mcp-client.mjs WORKQUEUE_BINARY BASE_URL TOKEN
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [binary, base, token] = process.argv.slice(2);
if (!binary || !base || !token) {
  console.error("usage: node mcp-client.mjs WORKQUEUE_BINARY BASE_URL TOKEN");
  process.exit(2);
}

function fail(msg) {
  console.error(`mcp-client: ${msg}`);
  process.exit(1);
}

async function exercise(name, transport) {
  const client = new Client({ name: "workqueue-interop", version: "1" });
  await client.connect(transport);
  const { tools } = await client.listTools(); // throws on a schema the SDK refuses
  if (tools.length < 20) fail(`${name}: listed ${tools.length} tools, want every one`);
  for (const want of ["list_items", "get_item", "start_session", "submit_change"]) {
    if (!tools.some((t) => t.name === want)) fail(`${name}: no tool ${want}`);
  }

  // A read tool: its structured answer is validated against its output schema.
  const listed = await client.callTool({ name: "list_items", arguments: { limit: 5 } });
  if (listed.isError) fail(`${name}: list_items: ${JSON.stringify(listed.content)}`);
  if (!Array.isArray(listed.structuredContent?.items)) fail(`${name}: list_items answered ${JSON.stringify(listed.structuredContent)}`);

  // A write tool, then its undoing.
  const started = await client.callTool({ name: "start_session", arguments: { role: "author", name: "interop", capabilities: { languages: ["go"] } } });
  if (started.isError) fail(`${name}: start_session: ${JSON.stringify(started.content)}`);
  const id = started.structuredContent?.id;
  if (!id) fail(`${name}: start_session answered no id: ${JSON.stringify(started.structuredContent)}`);
  const ended = await client.callTool({ name: "end_session", arguments: { session_id: id } });
  if (ended.isError || ended.structuredContent?.status !== "ended") fail(`${name}: end_session: ${JSON.stringify(ended)}`);

  // An invalid call: a tool error (or a protocol error), never an answer.
  let refused = false;
  try {
    const bad = await client.callTool({ name: "get_item", arguments: { id: "not-an-item-id" } });
    refused = bad.isError === true;
  } catch {
    refused = true;
  }
  if (!refused) fail(`${name}: get_item of a made-up id was not refused`);

  await client.close();
  console.log(`${name}: ${tools.length} tools listed; list_items, start_session and end_session answered; an invalid call refused`);
}

await exercise("stdio", new StdioClientTransport({
  command: binary,
  args: ["mcp"],
  env: { ...process.env, WORKQUEUE_URL: base, WORKQUEUE_TOKEN: token },
  stderr: "inherit",
}));

await exercise("streamable-http", new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
}));

// A bad token: connecting must fail with the service's 401.
try {
  const client = new Client({ name: "workqueue-interop", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: "Bearer wq_not-a-token" } },
  }));
  await client.listTools();
  fail("streamable-http: a bad token was accepted");
} catch (e) {
  if (!/401|nauthori/.test(String(e))) fail(`streamable-http: a bad token failed otherwise than 401: ${e}`);
  console.log("streamable-http: a bad token refused (401)");
}
