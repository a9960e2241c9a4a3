"""How much operational detail a text carries: the check that keeps rewrites non-actionable.

Partial compliance may explain how things work in general, but must not hand over a recipe. A
rewrite of a reply to a harmful request is accepted only if, for every kind of detail the policy
names, it has no more than the original reply had (usually none, since it refused).

Counted per kind, in all supported languages where practical:

* ``step_sequences``: numbered or bulleted procedure lines, "Step 3" markers, instructions
  introduced by a sequencing word ("then add"), runs of sequencing words (first... then...
  finally), and runs of imperative instructions.
* ``quantities``: numbers with units of mass, volume, concentration, temperature, length, time.
* ``code``: fenced blocks, shell prompts and commands, source-code lines.
* ``acquisition_sources``: URLs, onion sites, and "buy/order it from/at ..." phrasing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from guardrail.policies.schema import Detail

_NUMBERED_LINE = re.compile(r"^\s*(?:\d{1,2}\s*[.)、:]|[①-⑳]|\(\d{1,2}\))\s*\S", re.MULTILINE)
_BULLET_LINE = re.compile(r"^\s*[-*•]\s+\S", re.MULTILINE)
_STEP_MARKER = re.compile(
    r"(?<!\w)(?:step|paso|étape|etape|schritt|passo|etapa)\s*\d+"
    r"|第\s*[\d一二三四五六七八九十]+\s*[步歩]|ステップ\s*\d|\d+\s*단계",
    re.IGNORECASE,
)
_SEQUENCE = (
    r"(?<!\w)(?:first(?:ly)?|second(?:ly)?|next|then|after that|afterwards|finally|lastly"
    r"|primero|segundo|luego|después|a continuación|por último|finalmente"
    r"|d'abord|premièrement|ensuite|puis|enfin|finalement"
    r"|zuerst|zunächst|erstens|danach|dann|anschließend|schließlich|zuletzt"
    r"|primeiro|depois|em seguida|por fim)(?!\w)"
)
_SEQUENCE_WORDS = re.compile(
    _SEQUENCE
    + r"|首先|然后|接着|其次|最后|まず|次に|その後|最後に|먼저|그다음|그 다음|다음으로|마지막으로",
    re.IGNORECASE,
)
_VERBS = (
    r"(?:add|mix|combine|heat|boil|pour|stir|grind|crush|dissolve|"
    r"insert|attach|connect|drill|cut|remove|place|put|fill|seal|wrap|light|ignite|turn|"
    r"twist|push|pull|apply|install|download|run|execute|open|type|enter|set|configure|"
    r"compile|upload|inject|measure|weigh|filter|evaporate|distil|distill|extract|rake|"
    r"mezcla|añade|agrega|calienta|hierve|vierte|muele|disuelve|inserta|conecta|corta|"
    r"coloca|llena|instala|descarga|ejecuta|abre|mélange|mélangez|ajoute|ajoutez|chauffe|"
    r"chauffez|verse|versez|insère|insérez|connecte|connectez|coupe|coupez|place|placez|"
    r"remplis|remplissez|installe|installez|télécharge|téléchargez|exécute|exécutez|"
    r"mische|mischen|gib|geben|erhitze|erhitzen|gieße|gießen|füge|fügen|schneide|"
    r"installiere|lade|führe|öffne|misture|adicione|aqueça|despeje|corte|coloque|"
    r"instale|baixe|execute|abra)\b"
)
_IMPERATIVE = re.compile(r"^\s*(?:[-*•]\s*|\d{1,2}[.)]\s*)?" + _VERBS, re.IGNORECASE | re.MULTILINE)
_SEQUENCED_IMPERATIVE = re.compile(_SEQUENCE + r",?\s+(?:you\s+)?" + _VERBS, re.IGNORECASE)
_CJK_IMPERATIVE = re.compile(
    r"(?:^|[。\n])\s*(?:将|把|加入|混合|加热|倒入|切断|安装|下载|运行|打开)"
    r"|(?:を|に)(?:入れ|混ぜ|加熱し|注ぎ|切り|取り付け|インストールし|実行し)(?:ます|て|る)"
    r"|(?:을|를)\s*(?:넣|섞|가열하|붓|자르|설치하|실행하)(?:고|세요|십시오|어요)",
    re.MULTILINE,
)
_QUANTITY = re.compile(
    r"\d+(?:[.,]\d+)?\s*(?:-|–|to|a|bis|à|~)?\s*(?:\d+(?:[.,]\d+)?\s*)?"
    r"(?:mg|g|kg|µg|mcg|ug|grams?|gramm|gramos?|grammes?|gramas?|kilos?|kilograms?|"
    r"oz|ounces?|lbs?|pounds?|ml|cl|dl|l|liters?|litres?|liter|litros?|gallons?|"
    r"cups?|tbsp|tsp|tablespoons?|teaspoons?|mol|mmol|molar|ppm|%|percent|por ciento|"
    r"prozent|pour cent|por cento|°\s*[cf]|degrees?|grad|grados|graus|mm|cm|inch(?:es)?|"
    r"volts?|v|amps?|psi|bar|"
    r"克|毫克|千克|公斤|毫升|升|度|厘米|毫米|グラム|ミリグラム|キロ|ミリリットル|リットル|"
    r"センチ|ミリ|그램|밀리그램|킬로그램|밀리리터|리터|센티미터|밀리미터)(?![a-zA-Z])",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^\s*(```|~~~)", re.MULTILINE)
_CODE_LINE = re.compile(
    r"^\s*(?:\$\s+\S|sudo\s|pip\s+install|apt(?:-get)?\s+install|curl\s|wget\s|chmod\s|"
    r"import\s+\w|from\s+\w+\s+import|def\s+\w+\(|class\s+\w+[:(]|#include|int\s+main|"
    r"function\s+\w+\(|const\s+\w+\s*=|let\s+\w+\s*=|var\s+\w+\s*=|public\s+static|"
    r"SELECT\s.+\sFROM|<script|for\s*\(.*;.*;|while\s*\(|print\(|console\.log\()",
    re.MULTILINE,
)
_URL = re.compile(r"https?://\S+|www\.\S+|\b\S+\.onion\b", re.IGNORECASE)
_SOURCE = re.compile(
    r"(?<!\w)(?:buy|purchase|order|get|obtain|source|find)\w*\s+(?:\w+\s+){0,4}?"
    r"(?:from|at|on|via|through)\s+(?:the\s+)?(?:[A-Z]\w+|dark\s*web|darknet|telegram|"
    r"online\s+(?:shops?|stores?|vendors?)|amazon|ebay|alibaba)"
    r"|(?<!\w)(?:dark\s*web|darknet|silk\s*road|deep\s*web\s+market)"
    r"|(?:comprar|conseguir|acheter|commander|kaufen|bestellen|comprar)\s+(?:\w+\s+){0,4}?"
    r"(?:en|sur|auf|bei|no|na)\s+(?:[A-Z]\w+|la\s+dark\s*web|internet|amazon)"
    r"|暗网|在.{0,10}(?:购买|买到)|ダークウェブ|で(?:購入|買え)|다크웹|에서\s*(?:구매|구입|살 수)",
    re.IGNORECASE,
)

SEQUENCE_MIN = 3
"""Sequencing words must come in a run this long to read as a procedure."""
IMPERATIVE_MIN = 2
"""Two or more instruction lines in a row read as a procedure."""


@dataclass(frozen=True, slots=True)
class Actionability:
    """Counts of operational detail in one text, per :class:`Detail` kind."""

    step_sequences: int = 0
    quantities: int = 0
    code: int = 0
    acquisition_sources: int = 0

    def count(self, kind: Detail) -> int:
        return int(getattr(self, kind.value))

    @property
    def total(self) -> int:
        return self.step_sequences + self.quantities + self.code + self.acquisition_sources

    def exceeds(self, baseline: Actionability, kinds: Iterable[Detail]) -> list[Detail]:
        """The kinds where this text has more detail than ``baseline``."""
        return [kind for kind in kinds if self.count(kind) > baseline.count(kind)]


def assess(text: str) -> Actionability:
    """Count the operational detail in ``text``."""
    if not text:
        return Actionability()
    steps = len(_NUMBERED_LINE.findall(text)) + len(_STEP_MARKER.findall(text))
    bullets = len(_BULLET_LINE.findall(text))
    imperatives = len(_IMPERATIVE.findall(text)) + len(_CJK_IMPERATIVE.findall(text))
    sequence = len(_SEQUENCE_WORDS.findall(text))
    step_sequences = steps + len(_SEQUENCED_IMPERATIVE.findall(text))
    if imperatives >= IMPERATIVE_MIN:
        step_sequences += imperatives
    if sequence >= SEQUENCE_MIN:
        step_sequences += sequence
    if bullets and imperatives:
        step_sequences += bullets
    fences = len(_FENCE.findall(text)) // 2
    code = fences + len(_CODE_LINE.findall(text))
    sources = len(_URL.findall(text)) + len(_SOURCE.findall(text))
    return Actionability(
        step_sequences=step_sequences,
        quantities=len(_QUANTITY.findall(text)),
        code=code,
        acquisition_sources=sources,
    )
