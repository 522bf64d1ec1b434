// Test-only: the parts of the OpenAPI 3.1 document (GET /api/openapi.json) that the tests read, so they
// walk it with types instead of `any`.

/** A JSON Schema as zod-to-openapi writes it (a component reference, or an inline schema). */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  format?: string;
  example?: unknown;
  minimum?: number;
  exclusiveMinimum?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
}

export interface MediaTypeDoc {
  schema?: JsonSchema;
}

export interface ParameterDoc {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema?: JsonSchema;
}

export interface ResponseDoc {
  description: string;
  headers?: Record<string, { description?: string; schema?: JsonSchema }>;
  content?: Record<string, MediaTypeDoc>;
}

export interface OperationDoc {
  tags?: string[];
  summary?: string;
  security?: Record<string, string[]>[];
  parameters?: ParameterDoc[];
  requestBody?: { required?: boolean; content?: Record<string, MediaTypeDoc> };
  responses: Record<string, ResponseDoc>;
}

export interface OpenApiDoc {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, OperationDoc>>;
  components: { schemas: Record<string, JsonSchema>; securitySchemes: Record<string, Record<string, unknown>> };
}

/** The HTTP methods an OpenAPI path item may hold operations for. */
export const OPERATION_METHODS = ["get", "post", "put", "delete", "patch"] as const;
