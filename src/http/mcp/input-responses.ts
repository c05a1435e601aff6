import { describeJsonValue, isJsonObject } from "./json-shape.ts";

// In 2026-07-28 a client answers an input-required result by retrying the request with
// `params.inputResponses`: an object from each input request's key to the client's response
// object. The SDK sets aside keys it does not recognise but lets a malformed map through; a
// malformed map is a protocol error, refused before dispatch with -32602.

/** Why `params.inputResponses` is malformed, or undefined when it is absent or well-formed. */
export function inputResponsesProblem(params: unknown): string | undefined {
  if (!isJsonObject(params) || !Object.hasOwn(params, "inputResponses")) return undefined;
  const responses = params.inputResponses;
  if (!isJsonObject(responses)) {
    return `Invalid params: inputResponses must be an object mapping each input request's key to its response, not ${describeJsonValue(responses)}.`;
  }
  for (const [key, response] of Object.entries(responses)) {
    if (!isJsonObject(response)) {
      return `Invalid params: inputResponses.${key} must be a response object, not ${describeJsonValue(response)}.`;
    }
  }
  return undefined;
}
