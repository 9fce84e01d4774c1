// Jest's own order (slowest and failed files first), except that the files named here run after all others: they
// measure time and wait for the machine to be quiet, which it is once the rest of the suite is done (with two
// workers, once the other worker's last file has ended).
const Sequencer = require("@jest/test-sequencer").default;

const LAST = ["start-time.test.ts"];

class LastSequencer extends Sequencer {
  async sort(tests) {
    const order = await super.sort(tests);
    const last = (t) => LAST.some((name) => t.path.endsWith(name));
    return [...order.filter((t) => !last(t)), ...order.filter(last)];
  }
}

module.exports = LastSequencer;
