export const ATRIUM_VERSION = "0.1.0";
