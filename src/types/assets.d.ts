// Files imported `with { type: "file" }` resolve to a path (embedded in a compiled binary).
declare module "swagger-ui-dist/*.js" {
  const path: string;
  export default path;
}
declare module "swagger-ui-dist/*.css" {
  const path: string;
  export default path;
}
