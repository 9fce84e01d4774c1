# pysaml2 (Debian's python3-pysaml2) as a strict SP of svc's IdP, for test/integration/saml-sp-compat.test.ts:
# "request <idp metadata file>" prints the id and HTTP-Redirect URL of an AuthnRequest; "response <idp metadata file>
# <request id> [<key file> <cert file>]" reads a base64 Response from stdin and prints what pysaml2 took from it (or
# fails); with the key pair, pysaml2 decrypts encrypted assertions with it.
import json
import sys

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig

ENTITY_ID = "https://pysaml2.example.com/sp"
ACS = "https://pysaml2.example.com/acs"


def client(metadata_file, keypair=None):
    config = SPConfig()
    extra = {}
    if keypair:
        extra = {"key_file": keypair[0], "cert_file": keypair[1],
                 "encryption_keypairs": [{"key_file": keypair[0], "cert_file": keypair[1]}]}
    config.load({
        **extra,
        "entityid": ENTITY_ID,
        "xmlsec_binary": "/usr/bin/xmlsec1",
        "metadata": {"local": [metadata_file]},
        "allow_unknown_attributes": True,
        "service": {"sp": {
            "endpoints": {"assertion_consumer_service": [(ACS, BINDING_HTTP_POST)]},
            "want_assertions_signed": True,
            "want_response_signed": True,
            "allow_unsolicited": False,
        }},
    })
    return Saml2Client(config=config)


def main():
    command, metadata_file = sys.argv[1], sys.argv[2]
    sp = client(metadata_file, sys.argv[4:6] if len(sys.argv) >= 6 else None)
    if command == "request":
        request_id, info = sp.prepare_for_authenticate(binding=BINDING_HTTP_REDIRECT)
        print(json.dumps({"id": request_id, "url": dict(info["headers"])["Location"]}))
        return
    response = sp.parse_authn_request_response(sys.stdin.read(), BINDING_HTTP_POST, outstanding={sys.argv[3]: "/"})
    print(json.dumps({
        "nameId": response.name_id.text,
        "format": response.name_id.format,
        "inResponseTo": response.in_response_to,
        "attributes": response.ava,
    }))


main()
