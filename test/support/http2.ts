// One HTTP/2 request on an open h2c session, read to the end.
import type http2 from "node:http2";

export interface H2Answer {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: string;
}

export function h2Request(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string | Buffer): Promise<H2Answer> {
  const req = session.request(headers);
  const chunks: Buffer[] = [];
  return new Promise<H2Answer>((resolve, reject) => {
    let head: http2.IncomingHttpHeaders = {};
    req.on("response", (h) => {
      head = h;
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve({ status: Number(head[":status"]), headers: head, body: Buffer.concat(chunks).toString("utf8") }));
    req.on("error", reject);
    req.end(body);
  });
}
