// The SAML Response goes to the service provider as a form post (HTTP-POST binding): sent at once when scripts run;
// the page's button does the same without them.
document.getElementById("saml-post")?.submit();
