"""`{% shared_fragment "name" key timeout %}…{% endshared_fragment %}`: a part of a page kept
in the shared page cache (`webapp.runs.reads.page_cache`) under `key`, which the view builds from
everything the part shows, for `timeout` seconds.

Unlike Django's `{% cache %}`, a cache that fails only costs the drawing, and an empty key
draws the part every time. A part must not depend on who is looking beyond what its key
holds: no `{% csrf_token %}`, no user's name, nothing the viewer may or may not do unless
the view put that decision in the key.
"""

from __future__ import annotations

from django import template
from django.template.base import FilterExpression, NodeList, Parser, Token

from webapp.runs.reads.page_cache import fragment_key, shared

register = template.Library()


class SharedFragment(template.Node):
    def __init__(self, nodelist: NodeList, name: FilterExpression, key: FilterExpression,
                 timeout: FilterExpression) -> None:
        self.nodelist = nodelist
        self.name = name
        self.key = key
        self.timeout = timeout

    def render(self, context: template.Context) -> str:
        key = self.key.resolve(context)
        if not key:
            return self.nodelist.render(context)
        return shared(fragment_key(self.name.resolve(context), key),
                      lambda: self.nodelist.render(context),
                      timeout=int(self.timeout.resolve(context)))


@register.tag
def shared_fragment(parser: Parser, token: Token) -> SharedFragment:
    bits = token.split_contents()
    if len(bits) != 4:
        raise template.TemplateSyntaxError(
            f"{bits[0]} takes a name, a key and a timeout: "
            '{% shared_fragment "name" key timeout %}')
    nodelist = parser.parse(("endshared_fragment",))
    parser.delete_first_token()
    return SharedFragment(nodelist, *(parser.compile_filter(bit) for bit in bits[1:]))
