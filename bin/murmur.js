#!/usr/bin/env node
// The operator CLI as an installed command: runs src/cli/main.ts through tsx.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
