import { PLANT_WEBHOOK } from "./plant-webhook";

export const DOCUMENTATION = {
  // 3.1.0 rather than the generator's 3.1.2: tools such as Portman know versions up to 3.1.1.
  openapi: "3.1.0" as const,
  info: {
    title: "Plant Store",
    description: "Stores plants for the users who own them.",
    version: "1.0.0",
    license: { name: "MIT", url: "https://opensource.org/licenses/MIT" },
  },
  // Relative: the document is served by the service it describes, wherever that is deployed.
  servers: [{ url: "/", description: "The service serving this document" }],
  components: {
    securitySchemes: {
      bearerAuth: {
        type: "http",
        scheme: "bearer",
        description:
          "A token from `bun run cli token create` or `POST /tokens`. Each operation names the scope it needs in its security requirement.",
      },
    },
  },
  security: [{ bearerAuth: [] }],
  tags: [
    { name: "plants", description: "Your plants" },
    {
      name: "webhooks",
      description: "Endpoints told of your changes: created plants (`/plant/webhook`), or the change types you choose",
    },
    { name: "tokens", description: "Your bearer tokens: scoped, expiring, revoked by you" },
  ],
  webhooks: PLANT_WEBHOOK,
};
