// The events bench's webhook receiver (bench/scenarios/events.ts), in a process of its own as a real receiver would
// be: answers each POST 204 at once; while held, keeps the requests unanswered until released. Driven over IPC:
// {op: "hold"}, {op: "release"}, {op: "notify", n} (answers {reached: n} once n requests were answered),
// {op: "stop"}. Sends {port} once listening.
import { createServer } from "node:http";

let received = 0;
let hold = false;
let notifyAt;
const held = [];

function answer(res) {
  received++;
  res.writeHead(204).end();
  if (notifyAt !== undefined && received >= notifyAt) {
    process.send({ reached: notifyAt });
    notifyAt = undefined;
  }
}

const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => (hold ? held.push(res) : answer(res)));
});
server.keepAliveTimeout = 60_000;

process.on("message", (m) => {
  if (m.op === "hold") hold = true;
  else if (m.op === "release") {
    hold = false;
    for (const res of held.splice(0)) answer(res);
  } else if (m.op === "notify") {
    if (received >= m.n) process.send({ reached: m.n });
    else notifyAt = m.n;
  } else if (m.op === "stop") {
    for (const res of held.splice(0)) res.writeHead(204).end();
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
process.on("disconnect", () => process.exit(0));

server.listen(0, "127.0.0.1", () => process.send({ port: server.address().port }));
