# pysaml2 (Debian's python3-pysaml2) as SPs of svc's IdP that keep their sessions, for Single Logout tests
# (test/integration/saml-slo.test.ts) and NameIDs and attribute profiles (saml-name-ids.test.ts). One process holds the SPs' state (pysaml2's identity cache and outstanding
# logout requests); it reads one JSON command a line from stdin and writes one JSON answer a line to stdout:
#   {"cmd": "init", "idp": <idp metadata file>, "sps": [{"entity", "acs", "slo", "key", "cert"}]}
#   {"cmd": "login", "sp", "nameIdFormat"?}         -> {"id", "url"}    an AuthnRequest (HTTP-Redirect)
#   {"cmd": "acs", "sp", "id", "response"}          -> {"nameId", "format", "sessionIndex", "attributes"}
#   {"cmd": "logout", "sp", "binding"}              -> {"url", "fields"}  the SP's signed LogoutRequest
#   {"cmd": "logout_response", "sp", "binding", "message"} -> {"loggedIn"}  the IdP's LogoutResponse, handled
#   {"cmd": "logout_request", "sp", "binding", "message", "relayState", "otherUser"?} -> {"url", "fields", "loggedIn"}
#   {"cmd": "logged_in", "sp"}                      -> {"loggedIn"}
#   {"cmd": "soap_logout_request", "sp", "message"} -> {"body", "loggedIn"}  the IdP's LogoutRequest in a SOAP envelope,
#                                                      handled; body: the SP's signed LogoutResponse, SOAP-enveloped
# Errors are answered as {"error": "<message>"}.
import html
import json
import re
import sys
import traceback
from urllib.parse import parse_qs, urlparse

from xml.etree import ElementTree

import saml2.saml
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT, BINDING_SOAP
from saml2.client import Saml2Client
from saml2.pack import make_soap_enveloped_saml_thingy
from saml2.request import LogoutRequest
from saml2.samlp import STATUS_UNKNOWN_PRINCIPAL
from saml2.config import SPConfig
from saml2.s_utils import status_message_factory, success_status_factory

BINDINGS = {"redirect": BINDING_HTTP_REDIRECT, "post": BINDING_HTTP_POST}
# pysaml2 signs with RSA-SHA1 unless told: svc accepts RSA-SHA256/512 only.
RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256"
SAMLP = "urn:oasis:names:tc:SAML:2.0:protocol"
SPS = {}
NAME_IDS = {}


def client(idp_metadata, sp):
    config = SPConfig()
    config.load({
        "entityid": sp["entity"],
        "key_file": sp["key"],
        "cert_file": sp["cert"],
        "xmlsec_binary": "/usr/bin/xmlsec1",
        "metadata": {"local": [idp_metadata]},
        "allow_unknown_attributes": True,
        "service": {"sp": {
            "endpoints": {
                "assertion_consumer_service": [(sp["acs"], BINDING_HTTP_POST)],
                "single_logout_service": [(sp["slo"], BINDING_HTTP_REDIRECT), (sp["slo"], BINDING_HTTP_POST)],
            },
            "want_assertions_signed": True,
            "want_response_signed": True,
            "allow_unsolicited": False,
            "logout_requests_signed": True,
            "logout_responses_signed": True,
            "signing_algorithm": RSA_SHA256,
            "digest_algorithm": SHA256,
        }},
    })
    return Saml2Client(config=config)


def outgoing(info):
    """What pysaml2 would send: the Redirect URL, or the POST form's target and fields."""
    if info.get("method") == "POST" or "data" in info and "<form" in str(info.get("data", "")):
        data = str(info["data"])
        fields = {m.group(1): html.unescape(m.group(2)) for m in re.finditer(r'name="([^"]+)" value="([^"]*)"', data)}
        action = re.search(r'action="([^"]+)"', data)
        return {"url": html.unescape(action.group(1)) if action else info.get("url"), "fields": fields, "binding": "post"}
    location = dict(info["headers"])["Location"]
    return {"url": location, "fields": {k: v[0] for k, v in parse_qs(urlparse(location).query).items()}, "binding": "redirect"}


def handle(c):
    cmd = c["cmd"]
    if cmd == "init":
        for sp in c["sps"]:
            SPS[sp["entity"]] = client(c["idp"], sp)
        return {}
    sp = SPS[c["sp"]]
    if cmd == "login":
        extra = {"nameid_format": c["nameIdFormat"]} if c.get("nameIdFormat") else {}
        request_id, info = sp.prepare_for_authenticate(binding=BINDING_HTTP_REDIRECT, **extra)
        return {"id": request_id, "url": dict(info["headers"])["Location"]}
    if cmd == "acs":
        r = sp.parse_authn_request_response(c["response"], BINDING_HTTP_POST, outstanding={c["id"]: "/"})
        NAME_IDS[c["sp"]] = r.name_id
        return {"nameId": r.name_id.text, "format": r.name_id.format, "sessionIndex": r.assertion.authn_statement[0].session_index, "attributes": r.ava}
    if cmd == "logout":
        name_id = NAME_IDS[c["sp"]]
        idp = list(sp.users.issuers_of_info(name_id))
        responses = sp.do_logout(name_id, idp, "", None, expected_binding=BINDINGS[c["binding"]], sign_alg=RSA_SHA256, digest_alg=SHA256)
        _binding, info = responses[idp[0]]
        return outgoing(info)
    if cmd == "logout_response":
        r = sp.parse_logout_request_response(c["message"], BINDINGS[c["binding"]])
        if r is None:
            return {"error": "pysaml2 refused the LogoutResponse"}
        sp.handle_logout_response(r)
        return {"loggedIn": sp.is_logged_in(NAME_IDS[c["sp"]]), "status": r.response.status.status_code.value}
    if cmd == "logout_request":
        name_id = NAME_IDS[c["sp"]]
        if c.get("otherUser"):  # pysaml2 answers UnknownPrincipal: the request names someone else
            name_id = saml2.saml.NameID(text="someone-else", format=name_id.format)
        info = sp.handle_logout_request(
            c["message"], name_id, BINDINGS[c["binding"]], relay_state=c.get("relayState", ""), sign_alg=RSA_SHA256, digest_alg=SHA256)
        return {**outgoing(info), "loggedIn": sp.is_logged_in(NAME_IDS[c["sp"]])}
    if cmd == "soap_logout_request":
        # pysaml2 takes the message out of the SOAP envelope by serializing it again with ElementTree, which renames
        # the namespace prefixes it was not told of (ns0, ns1, ...): that changes the message's exclusive canonical
        # form, so no signature over it would verify. Registering the usual prefixes keeps them (svc uses these).
        for prefix, uri in {"samlp": SAMLP, "saml": saml2.saml.NAMESPACE, "ds": "http://www.w3.org/2000/09/xmldsig#"}.items():
            ElementTree.register_namespace(prefix, uri)
        # handle_logout_request's own steps: with BINDING_SOAP and a signed response, its apply_binding signs the signed
        # text again and fails (pysaml2 6/7: class_name of a str), so the signed response is enveloped here.
        name_id = NAME_IDS[c["sp"]]
        request = sp._parse_request(c["message"], LogoutRequest, "single_logout_service", BINDING_SOAP)  # checks svc's signature
        if request.message.name_id == name_id and sp.local_logout(name_id):
            status = success_status_factory()
        else:
            status = status_message_factory("Wrong user", STATUS_UNKNOWN_PRINCIPAL)
        response = sp.create_logout_response(
            request.message, bindings=[BINDING_SOAP], status=status, sign=True, sign_alg=RSA_SHA256, digest_alg=SHA256)
        return {"body": make_soap_enveloped_saml_thingy(str(response)), "loggedIn": sp.is_logged_in(name_id)}
    if cmd == "logged_in":
        return {"loggedIn": sp.is_logged_in(NAME_IDS[c["sp"]])}
    return {"error": "unknown command " + cmd}


for line in sys.stdin:
    try:
        answer = handle(json.loads(line))
    except Exception as e:  # the test reads the refusal
        traceback.print_exc(file=sys.stderr)
        answer = {"error": "%s: %s" % (type(e).__name__, e)}
    sys.stdout.write(json.dumps(answer, default=str) + "\n")
    sys.stdout.flush()
