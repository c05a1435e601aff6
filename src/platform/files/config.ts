import type { ConfigSection } from "../../instance/schema.ts";

export const MAX_UPLOAD_BYTES_DEFAULT = 50 * 1024 * 1024;

export interface FilesSettings {
  /** The largest file one write or upload may store. */
  maxUploadBytes: number;
}

/** instance.json's `files` section. */
export const filesConfig: ConfigSection<FilesSettings> = {
  schema: {
    type: "object",
    additionalProperties: false,
    properties: { maxUploadBytes: { type: "integer", minimum: 1 } },
  },
  resolve(section) {
    const file = (section ?? {}) as { maxUploadBytes?: number };
    return { maxUploadBytes: file.maxUploadBytes ?? MAX_UPLOAD_BYTES_DEFAULT };
  },
};
