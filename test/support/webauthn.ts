// A software authenticator for the WebAuthn tests: an EC P-256 key made with node:crypto, attestation "none", the
// authenticator data and CBOR built by hand (CBOR with @levischuck/tiny-cbor, which @simplewebauthn/server uses to
// read it). It answers navigator.credentials.create() and .get() options as a browser would for `origin`, so a
// test can also claim a wrong origin, answer another challenge or sign for another relying party.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import { type CBORType, encodeCBOR } from "@levischuck/tiny-cbor";

// biome-ignore lint/suspicious/noExplicitAny: options and responses are WebAuthn JSON
type Json = any;

const b64url = (b: Uint8Array | Buffer | string) => Buffer.from(b).toString("base64url");
const sha256 = (b: Uint8Array | Buffer | string) => createHash("sha256").update(b).digest();

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_AT = 0x40;

export interface AnswerOptions {
  /** The origin the "browser" reports (default: https://<rpId of the options>). */
  origin?: string;
  /** Sign for this relying party instead of the one in the options. */
  rpId?: string;
  /** Answer this challenge instead of the options' one. */
  challenge?: string;
  /** Whether the authenticator verified the user (default: true). */
  userVerified?: boolean;
}

export class SoftAuthenticator {
  readonly credentialId = randomBytes(16);
  private readonly privateKey: KeyObject;
  private readonly jwk: { x: string; y: string };
  private counter = 0;
  private userHandle = "";

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    this.privateKey = privateKey;
    this.jwk = publicKey.export({ format: "jwk" }) as { x: string; y: string };
  }

  get id(): string {
    return b64url(this.credentialId);
  }

  /** The RegistrationResponseJSON for PublicKeyCredentialCreationOptionsJSON. */
  register(options: Json, o: AnswerOptions = {}): Json {
    const rpId: string = o.rpId ?? options.rp.id;
    this.userHandle = options.user.id;
    const clientDataJSON = this.clientData("webauthn.create", options, rpId, o);
    const cose = encodeCBOR(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(this.jwk.x, "base64url")],
        [-3, Buffer.from(this.jwk.y, "base64url")],
      ]),
    );
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const attested = Buffer.concat([Buffer.alloc(16), idLength, this.credentialId, Buffer.from(cose)]);
    const authData = Buffer.concat([this.authData(rpId, FLAG_AT, o), attested]);
    const attestationObject = encodeCBOR(
      new Map<string, CBORType>([
        ["fmt", "none"],
        ["attStmt", new Map<string, CBORType>()],
        ["authData", authData],
      ]),
    );
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
      response: { clientDataJSON: b64url(clientDataJSON), attestationObject: b64url(attestationObject), transports: ["internal"] },
    };
  }

  /** The AuthenticationResponseJSON for PublicKeyCredentialRequestOptionsJSON. */
  authenticate(options: Json, o: AnswerOptions = {}): Json {
    const rpId: string = o.rpId ?? options.rpId;
    const clientDataJSON = this.clientData("webauthn.get", options, rpId, o);
    const authData = this.authData(rpId, 0, o);
    const signature = sign("sha256", Buffer.concat([authData, sha256(clientDataJSON)]), this.privateKey);
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: this.userHandle || undefined,
      },
    };
  }

  private clientData(type: string, options: Json, rpId: string, o: AnswerOptions): string {
    return JSON.stringify({ type, challenge: o.challenge ?? options.challenge, origin: o.origin ?? `https://${rpId}`, crossOrigin: false });
  }

  private authData(rpId: string, extraFlags: number, o: AnswerOptions): Buffer {
    const flags = FLAG_UP | (o.userVerified === false ? 0 : FLAG_UV) | extraFlags;
    const count = Buffer.alloc(4);
    count.writeUInt32BE(++this.counter);
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), count]);
  }
}
