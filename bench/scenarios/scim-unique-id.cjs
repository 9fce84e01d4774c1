// autocannon setupRequest for the SCIM create scenarios (runs in autocannon's
// worker thread, which can only `require` a file): every "[<id>]" in the body
// becomes an id unique to this request, so that no create collides on userName.
const { randomBytes } = require("node:crypto");

const run = randomBytes(4).toString("hex");
let next = 0;
module.exports = function setupRequest(req) {
  const id = `${run}-${next++}`;
  const body = String(req.body).split("[<id>]").join(id);
  // autocannon writes Content-Length from the body itself; a second header would make the request malformed.
  const headers = Object.fromEntries(Object.entries(req.headers ?? {}).filter(([k]) => k.toLowerCase() !== "content-length"));
  return { ...req, body, headers };
};
