// The pure rules of user input (src/domain/identity/user-input.ts, scim-profile.ts): no server, no database.
import { describe, expect, it } from "@jest/globals";
import { DomainError } from "../../src/domain/errors.js";
import { MAX_CHILD_ROWS, scimProfileColumns } from "../../src/domain/identity/scim-profile.js";
import { text, validateUsername, validEmail, validLanguage, validMetadata, validPhone } from "../../src/domain/identity/user-input.js";

/** The message id of the DomainError `fn` throws. */
function refusal(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return err.id;
    throw err;
  }
  return undefined;
}

const profile = { emails: [], phoneNumbers: [], addresses: [] };

describe("text fields", () => {
  it("trims, treats blank as absent and refuses control characters and excess length", () => {
    expect(text("  Ada ", "given_name")).toBe("Ada");
    expect(text("  ", "given_name")).toBeUndefined();
    expect(refusal(() => text(" ", "given_name", { required: true }))).toBe("Errors.User.given_name.Missing");
    expect(refusal(() => text("a\u0007b", "given_name"))).toBe("Errors.User.given_name.Invalid");
    expect(refusal(() => text("x".repeat(201), "given_name"))).toBe("Errors.User.given_name.TooLong");
    expect(text("x".repeat(300), "formatted", { max: 300 })).toHaveLength(300);
  });

  it("usernames, addresses, numbers and language tags", () => {
    expect(refusal(() => validateUsername("ada lovelace"))).toBe("Errors.User.Username.Invalid");
    expect(validateUsername(" ada ")).toBe("ada");
    expect(validEmail("ada@example.com", "email")).toBe("ada@example.com");
    expect(refusal(() => validEmail("ada@example", "email"))).toBe("Errors.User.Email.Invalid");
    expect(validPhone("")).toBeUndefined();
    expect(refusal(() => validPhone("call me"))).toBe("Errors.User.Phone.Invalid");
    expect(validLanguage("de-CH")).toBe("de-CH");
    expect(refusal(() => validLanguage("german!"))).toBe("Errors.User.PreferredLanguage.Invalid");
  });

  it("metadata: unique keys, bounded values", () => {
    const v = new Uint8Array([1]);
    expect(validMetadata([{ key: " k ", value: v }])).toEqual([{ key: "k", value: v }]);
    expect(
      refusal(() =>
        validMetadata([
          { key: "k", value: v },
          { key: "k", value: v },
        ]),
      ),
    ).toBe("Errors.User.Metadata.Duplicate");
    expect(refusal(() => validMetadata([{ key: "k", value: new Uint8Array(64 * 1024 + 1) }]))).toBe("Errors.User.Metadata.TooLarge");
  });
});

describe("SCIM profile", () => {
  it("takes the primary entries (or the first) as the user's email and phone, positions kept", () => {
    const { columns, rows } = scimProfileColumns({
      ...profile,
      emails: [
        { value: "work@example.com", primary: false },
        { value: "home@example.com", primary: true },
      ],
      phoneNumbers: [{ value: "+41 44 000 00 00", primary: false }],
    });
    expect(columns.email).toBe("home@example.com");
    expect(columns.phone).toBe("+41 44 000 00 00");
    expect(rows.emails.map((e) => [e.position, e.value])).toEqual([
      [0, "work@example.com"],
      [1, "home@example.com"],
    ]);
  });

  it("clears what is absent", () => {
    const { columns } = scimProfileColumns(profile);
    expect(columns).toMatchObject({ givenName: null, email: null, phone: null, profileUrl: null });
  });

  it("refuses two primaries, too many entries and unusable formats", () => {
    const two = [
      { value: "a@example.com", primary: true },
      { value: "b@example.com", primary: true },
    ];
    expect(refusal(() => scimProfileColumns({ ...profile, emails: two }))).toBe("Errors.User.emails.PrimaryTwice");
    const many = Array.from({ length: MAX_CHILD_ROWS + 1 }, () => ({ value: "+41 44 000 00 00", primary: false }));
    expect(refusal(() => scimProfileColumns({ ...profile, phoneNumbers: many }))).toBe("Errors.User.phoneNumbers.TooMany");
    expect(refusal(() => scimProfileColumns({ ...profile, profileUrl: "javascript:alert(1)" }))).toBe("Errors.User.ProfileUrl.Invalid");
    expect(refusal(() => scimProfileColumns({ ...profile, timezone: "Mars/Olympus_Mons" }))).toBe("Errors.User.Timezone.Invalid");
    expect(refusal(() => scimProfileColumns({ ...profile, locale: "en US" }))).toBe("Errors.User.Locale.Invalid");
    expect(scimProfileColumns({ ...profile, timezone: "Europe/Zurich", locale: "de_CH" }).columns).toMatchObject({
      timezone: "Europe/Zurich",
      locale: "de_CH",
    });
  });

  it("keeps an address's line breaks", () => {
    const { rows } = scimProfileColumns({ ...profile, addresses: [{ formatted: "1 Main St\nZurich", primary: true }] });
    expect(rows.addresses[0]?.formatted).toBe("1 Main St\nZurich");
  });
});
