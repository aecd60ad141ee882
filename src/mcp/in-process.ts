// The tool server of one request, reached in process (design.md, "MCP, current revision"): revision
// 2026-07-28's tools/list and tools/call are handed, as JSON-RPC messages, to the McpServer that
// buildMcpServer makes for 2025-11-25 clients, so both revisions run the same tools with the same
// validation, budgets and errors.

import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolRequestSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { buildMcpServer } from './mcp-tools.js';
import type { ToolContext } from './tool-context.js';

export interface McpToolServer {
  /** One request's response; the notifications it sends on the way (progress) go to `onNotification`. */
  handle(message: { id: string | number; method: string }, onNotification: (note: unknown) => void): Promise<unknown>;
}

export function toolServer(ctx: ToolContext): McpToolServer {
  return {
    async handle(message, onNotification) {
      if (message.method === 'tools/call') {
        const parsed = CallToolRequestSchema.safeParse(message);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          const where = issue ? `${issue.path.map(String).join('.') || 'params'}: ${issue.message}` : 'invalid';
          return {
            jsonrpc: '2.0',
            id: message.id,
            error: { code: -32602, message: `Invalid params: ${where}. tools/call needs params.name and, optionally, params.arguments as an object.` },
          };
        }
      }
      const server = buildMcpServer(ctx);
      const [client, inner] = InMemoryTransport.createLinkedPair();
      await server.connect(inner);
      try {
        return await new Promise<unknown>((resolve, reject) => {
          client.onmessage = (m: JSONRPCMessage) => {
            if ('id' in m && m.id === message.id && ('result' in m || 'error' in m)) resolve(m);
            else if ('method' in m) onNotification(m);
          };
          client
            .start()
            .then(() => client.send(message as JSONRPCMessage))
            .catch(reject);
        });
      } finally {
        await server.close();
      }
    },
  };
}
