// The part of express 5 the peer benchmark uses. Express ships no types and @types/express is not a
// dependency; this is enough for bench/ingest-peers.ts to type-check.
declare module 'express' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Request extends IncomingMessage {
    params: Record<string, string>;
    body: unknown;
    get(name: string): string | undefined;
  }
  interface Response extends ServerResponse {
    status(code: number): Response;
    set(fields: Record<string, string>): Response;
    json(body: unknown): Response;
  }
  type NextFunction = (error?: unknown) => void;
  type Handler = (req: Request, res: Response, next: NextFunction) => void;
  interface Application {
    (req: IncomingMessage, res: ServerResponse): void;
    post(path: string, ...handlers: Handler[]): Application;
  }
  interface Express {
    (): Application;
    json(options?: { limit?: number | string }): Handler;
  }
  const express: Express;
  export default express;
}
