import type { Timestamp } from "@bufbuild/protobuf/wkt";

export const toDate = (ts: Timestamp | undefined): Date | undefined => (ts ? new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6)) : undefined);
