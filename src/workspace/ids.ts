import { randomBytes } from "node:crypto";

const WORKSPACE_ID = /^ws_[0-9a-f]{16}$/;

export function newWorkspaceId(): string {
  return `ws_${randomBytes(8).toString("hex")}`;
}

export function isWorkspaceId(value: string): boolean {
  return WORKSPACE_ID.test(value);
}
