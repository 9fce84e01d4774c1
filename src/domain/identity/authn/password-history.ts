// The password history (password complexity setting historyCount): a new password must differ from the user's last
// N passwords, the current one included. Old hashes are kept by storePassword on every change (at most 24 per user);
// each is checked with its own algorithm (argon2id or an imported one), one after the other on libuv's thread pool.
import { verifyPassword } from "../../../crypto/passwords.js";
import type { Ctx } from "../../context.js";
import { invalidArgument } from "../../errors.js";

export async function checkPasswordHistory(ctx: Ctx, user: { id: string }, password: string, historyCount: number): Promise<void> {
  if (historyCount <= 0) return;
  const current = await ctx.store.users.passwordHash(user.id);
  const previous = await ctx.store.authn.passwordHistory(user.id, current ? historyCount - 1 : historyCount);
  for (const hash of current ? [current, ...previous] : previous) {
    if ((await verifyPassword(hash, password)).ok) {
      throw invalidArgument("Errors.User.Password.InHistory", `the password must differ from the last ${historyCount} passwords`, { field: "new_password" });
    }
  }
}
