// Files imported `with { type: "file" }` resolve to a path (embedded in a compiled binary).
declare module "swagger-ui-dist/*" {
  const path: string;
  export default path;
}
