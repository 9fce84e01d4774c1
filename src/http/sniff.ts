// One port for every protocol: each new connection is sniffed for the
// HTTP/2 connection preface. h2c (prior knowledge) goes to the HTTP/2 server
// (gRPC, Connect, gRPC-Web); everything else to the listening HTTP/1.1 server,
// which keeps Node's own header/request timeouts and connection draining.
import type http from "node:http";
import type http2 from "node:http2";
import type net from "node:net";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export function routeConnectionsByPreface(h1: http.Server, h2: http2.Http2Server, sniffTimeoutMs: number): void {
  const [h1Connection] = h1.listeners("connection") as ((s: net.Socket) => void)[];
  if (!h1Connection) throw new Error("http server has no connection listener");
  h1.removeAllListeners("connection");
  h1.on("connection", (socket: net.Socket) => {
    let seen: Buffer = Buffer.alloc(0);
    const kill = () => socket.destroy();
    socket.on("error", kill);
    // A client that half-closes before its first request never sends one.
    socket.once("end", kill);
    // A deadline, not an idle timer: a client dribbling the 24-byte preface a byte at a time must not hold the
    // connection for 24 idle periods.
    const deadline = setTimeout(kill, sniffTimeoutMs);
    socket.once("close", () => clearTimeout(deadline));
    const decide = () => {
      let chunk = socket.read() as Buffer | null;
      while (chunk !== null) {
        seen = seen.length ? Buffer.concat([seen, chunk]) : chunk;
        chunk = socket.read() as Buffer | null;
      }
      const n = Math.min(seen.length, PREFACE.length);
      const isH2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (isH2 && seen.length < PREFACE.length) return;
      socket.off("readable", decide);
      socket.off("error", kill);
      socket.off("end", kill);
      clearTimeout(deadline);
      socket.unshift(seen);
      if (isH2) {
        // The socket comes from the HTTP/1.1 server, which lets sockets stay half-open; an HTTP/2 session must see a
        // peer's FIN as the end of the connection (its streams then end), as on an HTTP/2 server of its own.
        socket.allowHalfOpen = false;
        h2.emit("connection", socket);
      } else h1Connection.call(h1, socket);
    };
    socket.on("readable", decide);
  });
}
