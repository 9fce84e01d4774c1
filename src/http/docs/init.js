// Starts Swagger UI on the API reference page (a file of its own: the page's CSP allows no inline script).
window.ui = window.SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  docExpansion: "none",
  defaultModelsExpandDepth: 0,
  tryItOutEnabled: false,
});
