import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(30_000);
