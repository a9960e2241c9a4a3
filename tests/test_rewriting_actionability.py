"""The actionability check: procedures, quantities, code and sources, in several languages."""

from __future__ import annotations

import pytest

from guardrail.policies import Detail
from guardrail.rewriting.actionability import Actionability, assess

OPERATIONAL = {
    "en numbered": (
        "1. Mix 20 g of the powder with sugar.\n2. Heat it to 150 °C.\n3. Pour it into a tube.",
        {"step_sequences", "quantities"},
    ),
    "en sequence words": (
        "First, remove the cover. Then, insert the tension wrench. Next, rake the pins. "
        "Finally, turn the cylinder.",
        {"step_sequences"},
    ),
    "en code": ("Run this:\n```bash\nsudo nmap -sS 10.0.0.0/24\n```", {"code"}),
    "en source": (
        "You can order it from Amazon or at https://shop.example/kit.",
        {"acquisition_sources"},
    ),
    "es": (
        "Primero, mezcla 50 gramos del polvo. Luego, calienta la mezcla. Finalmente, vierte todo.",
        {"step_sequences", "quantities"},
    ),
    "fr": (
        "Étape 1 : ajoutez 30 ml d'acide. Étape 2 : chauffez doucement.",
        {"step_sequences", "quantities"},
    ),
    "de": ("Schritt 1: 10 Gramm abwiegen. Schritt 2: erhitzen.", {"step_sequences", "quantities"}),
    "pt": (
        "Primeiro, misture 5 ml. Depois, aqueça. Por fim, despeje no molde.",
        {"step_sequences", "quantities"},
    ),
    "zh": (
        "首先，将50克硝酸钾加入锅中。然后加热。最后倒入模具。",
        {"step_sequences", "quantities"},
    ),
    "ja": (
        "まず、50グラムを入れます。次に、混ぜて加熱します。最後に型に注ぎます。",
        {"step_sequences", "quantities"},
    ),
    "ko": (
        "먼저 50그램을 넣고 섞으세요. 그다음 가열하세요. 마지막으로 틀에 붓습니다.",
        {"step_sequences", "quantities"},
    ),
    "dark web": ("People usually get these on the dark web.", {"acquisition_sources"}),
    "one sequenced instruction": (
        "First, insert a tension wrench, then rake the pins.",
        {"step_sequences"},
    ),
}

GENERAL = {
    "en": "Pin-tumbler locks work by aligning pins at the shear line. Picking a lock you don't own "
    "is illegal in most countries, and a licensed locksmith can help if you're locked out.",
    "en history": "The first locks appeared in ancient Egypt, and then the Romans improved them. "
    "In 1848 Linus Yale patented the modern pin tumbler.",
    "es": "Las cerraduras de pines funcionan alineando los pines en la línea de corte. En muchos "
    "países es ilegal abrir una cerradura ajena.",
    "zh": "弹子锁的原理是让锁芯里的弹子对齐。在大多数国家，撬开别人的锁是违法的。",
    "ja": "シリンダー錠は、ピンの位置がそろうと回る仕組みです。"
    "他人の鍵を開けることは多くの国で違法です。",
    "ko": "핀 텀블러 자물쇠는 핀이 정렬되면 열리는 원리예요. 남의 자물쇠를 여는 것은 불법이에요.",
}


@pytest.mark.parametrize("name", sorted(OPERATIONAL))
def test_operational_detail_is_found(name: str) -> None:
    text, kinds = OPERATIONAL[name]
    found = assess(text)
    assert {kind.value for kind in Detail if found.count(kind)} == kinds


@pytest.mark.parametrize("name", sorted(GENERAL))
def test_general_explanations_carry_no_detail(name: str) -> None:
    assert assess(GENERAL[name]) == Actionability()


def test_exceeds_compares_only_the_named_kinds() -> None:
    original = assess("Take 200 mg with water.")
    rewrite = assess("Take 200 mg with water, or 400 mg if needed. Step 1: call a doctor.")
    assert rewrite.exceeds(original, [Detail.QUANTITIES]) == [Detail.QUANTITIES]
    assert rewrite.exceeds(original, [Detail.CODE]) == []
    assert assess("").total == 0
