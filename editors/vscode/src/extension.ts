// The mutatis extension starts `mutatis lsp` over stdio and hands it the
// YAML and JSON documents of the workspace. Everything else (diagnostics,
// completion, hover, definitions, quick fixes, the suite's code lens) is
// the server's. No telemetry.
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const config = vscode.workspace.getConfiguration("mutatis");
  const command = config.get<string>("path", "mutatis");
  const args = ["lsp", ...config.get<string[]>("args", [])];
  const serverOptions: ServerOptions = { command, args };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "yaml" },
      { scheme: "file", language: "json" },
    ],
  };
  client = new LanguageClient("mutatis", "mutatis", serverOptions, clientOptions);
  context.subscriptions.push(client);
  await client.start();
}

export async function deactivate(): Promise<void> {
  if (client) {
    await client.stop();
  }
}
