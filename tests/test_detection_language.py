"""Language identification: writing system first, py3langid within it, phrases for short texts;
the compact, cached form of py3langid's model."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier
from py3langid.modelio import load_model

from guardrail.detection import language
from guardrail.detection.language import (
    SCRIPT_LANGUAGES,
    identify_language,
    load_identifier,
    script_counts,
)


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("To stop a process on Linux, find its PID and run the kill command.", "en"),
        ("Para detener un proceso en Linux, busca su PID y ejecuta el comando kill.", "es"),
        ("Pour arrêter un processus sous Linux, trouve son PID et lance la commande kill.", "fr"),
        ("Um einen Prozess unter Linux zu beenden, suche seine PID und führe kill aus.", "de"),
        ("Para parar um processo no Linux, encontre o PID e execute o comando kill.", "pt"),
        ("Per fermare un processo su Linux, trova il suo PID ed esegui il comando kill.", "it"),
        ("Чтобы остановить процесс в Linux, найдите его PID и выполните команду kill.", "ru"),
        ("لإيقاف عملية في لينكس، اعرف رقمها ثم نفذ الأمر kill.", "ar"),
        ("लिनक्स में किसी प्रोसेस को रोकने के लिए उसकी आईडी ढूंढें और kill चलाएं।", "hi"),
        ("Để dừng một tiến trình trên Linux, hãy tìm PID của nó và chạy lệnh kill.", "vi"),
        ("要在Linux上停止进程，先找到它的进程号，然后运行kill命令。", "zh"),
        ("Linuxでプロセスを止めるには、PIDを調べてkillコマンドを実行します。", "ja"),
        ("리눅스에서 프로세스를 멈추려면 PID를 찾은 뒤 kill 명령을 실행하세요.", "ko"),
        ("Linux'ta bir işlemi durdurmak için PID'sini bulun ve kill komutunu çalıştırın.", "tr"),
        ("Om een proces in Linux te stoppen, zoek je de PID op en voer je kill uit.", "nl"),
        ("Aby zatrzymać proces w Linuksie, znajdź jego PID i uruchom polecenie kill.", "pl"),
        ("Untuk menghentikan proses di Linux, cari PID-nya lalu jalankan perintah kill.", "id"),
        ("Ili kusimamisha mchakato kwenye Linux, tafuta PID yake kisha endesha kill.", "sw"),
        ("Щоб зупинити процес у Linux, знайдіть його PID і виконайте команду kill.", "uk"),
        ("برای متوقف کردن یک فرایند در لینوکس، شناسه‌اش را پیدا کنید و kill را اجرا کنید.", "fa"),
        ("লিনাক্সে কোনো প্রসেস বন্ধ করতে তার আইডি খুঁজে kill কমান্ড চালান।", "bn"),
        ("หากต้องการหยุดโปรเซสบน Linux ให้หา PID แล้วรันคำสั่ง kill", "th"),
        ("Για να σταματήσετε μια διεργασία στο Linux, βρείτε το PID της και εκτελέστε kill.", "el"),
        ("כדי לעצור תהליך בלינוקס, מצאו את מזהה התהליך והריצו את הפקודה kill.", "he"),
        ("Pentru a opri un proces în Linux, găsește-i PID-ul și rulează comanda kill.", "ro"),
        ("Chcete-li zastavit proces v Linuxu, najděte jeho PID a spusťte příkaz kill.", "cs"),
        ("Ak chcete zastaviť proces v Linuxe, nájdite jeho PID a spustite príkaz kill.", "sk"),
        ("Da biste zaustavili proces u Linuxu, pronađite njegov PID i pokrenite kill.", "hr"),
        ("Če želite ustaviti proces v Linuxu, poiščite njegov PID in zaženite ukaz kill.", "sl"),
        ("Per aturar un procés a Linux, cerca el seu PID i executa l'ordre kill.", "ca"),
        ("Да бисте зауставили процес у Линуксу, пронађите PID и покрените команду kill.", "sr"),
        ("Norėdami sustabdyti procesą Linux sistemoje, raskite jo PID ir paleiskite kill.", "lt"),
        ("Lai apturētu procesu Linux vidē, atrodiet tā PID un palaidiet komandu kill.", "lv"),
        ("Protsessi peatamiseks Linuxis leia selle PID ja käivita käsk kill.", "et"),
        ("Linux-da prosesi dayandırmaq üçün onun PID-ni tapın və kill əmrini işə salın.", "az"),
        ("За да запрете процес во Linux, пронајдете го неговиот PID и извршете kill.", "mk"),
        ("Egy folyamat leállításához keresd meg a PID-jét, és futtasd a kill parancsot.", "hu"),
        ("För att stoppa en process i Linux letar du upp dess PID och kör kommandot kill.", "sv"),
        ("For at stoppe en proces i Linux skal du finde dens PID og køre kommandoen kill.", "da"),
        ("Pysäyttääksesi prosessin Linuxissa etsi sen PID ja suorita kill-komento.", "fi"),
        ("За да спрете процес в Linux, намерете неговия PID и изпълнете командата kill.", "bg"),
        ("Para ihinto ang proseso sa Linux, hanapin ang PID nito at patakbuhin ang kill.", "tl"),
        ("لینکس میں کسی پروسیس کو روکنے کے لیے اس کا پی آئی ڈی تلاش کریں اور کِل چلائیں۔", "ur"),
        ("लिनक्समध्ये प्रोसेस थांबवण्यासाठी तिचा पीआयडी शोधा आणि kill कमांड चालवा.", "mr"),
        ("லினக்ஸில் ஒரு செயல்முறையை நிறுத்த அதன் PID-ஐக் கண்டுபிடித்து kill கட்டளையை இயக்கவும்.", "ta"),
        ("లినక్స్‌లో ఒక ప్రాసెస్‌ను ఆపడానికి దాని PID కనుగొని kill ఆదేశాన్ని అమలు చేయండి.", "te"),
    ],
)
def test_replies_are_identified_in_every_supported_language(text: str, lang: str) -> None:
    assert identify_language(text) == lang


def test_plain_english_is_told_without_the_statistical_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unavailable() -> None:
        raise AssertionError("py3langid consulted")

    monkeypatch.setattr(language, "_get_identifier", unavailable)
    assert identify_language("Sorry, but I can't help with that request.") == "en"
    assert identify_language("To kill a Python process, find its PID and run kill.") == "en"


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("Maaf, saya tidak bisa membantu dengan request ini karena it's not allowed.", "id"),
        ("Pasensya na, pero hindi ko magagawa yan kasi it's not safe.", "tl"),
        ("Samahani, siwezi kukusaidia na hiyo because it is against the rules.", "sw"),
    ],
)
def test_english_mixed_into_another_language_does_not_make_it_english(text: str, lang: str) -> None:
    assert identify_language(text) == lang


def test_text_without_letters_is_undetermined() -> None:
    assert identify_language("") == "und"
    assert identify_language("12345 !!!") == "und"


def test_a_short_reply_follows_the_lexicon_that_matched_it() -> None:
    assert identify_language("Nein.", matched={"de"}) == "de"
    assert identify_language("No.") == "en"


def test_kanji_only_text_is_chinese_and_kana_makes_it_japanese() -> None:
    assert identify_language("我无法提供帮助。") == "zh"
    assert identify_language("お手伝いできません。") == "ja"


def test_scripts_are_counted_by_letter() -> None:
    counts = script_counts("AI 助手です한국")
    assert counts["latin"] == 2
    assert counts["han"] == 2
    assert counts["kana"] == 2
    assert counts["hangul"] == 2
    latin = script_counts("Hello, wörld 123!")
    assert latin["latin"] == 10
    assert set(latin) == set(counts)
    assert sum(latin.values()) == 10


SAMPLES = [
    "Je suis désolé, mais je ne peux pas vous aider avec cette demande.",
    "Српски језик: Извините, али не могу да помогнем са тим.",
    "I CANNOT HELP WITH THAT REQUEST.",
    "Mixed текст with 中文 and emoji 🙂 and a stray \udcff surrogate.",
    "",
    "!!!",
]


@pytest.fixture(scope="module")
def reference() -> LanguageIdentifier:
    """py3langid's own identifier over the same languages, as the detector used to load it."""
    ptc, pc, classes, nextmove, row, output = load_model(MODEL_DIR / MODEL_FILE)
    wanted = {lang for langs in SCRIPT_LANGUAGES.values() for lang in langs}
    keep = [i for i, lang in enumerate(classes) if lang in wanted]
    return LanguageIdentifier(
        np.ascontiguousarray(ptc[:, keep]),
        np.asarray(pc)[keep],
        [classes[i] for i in keep],
        nextmove,
        output,
        norm_probs=True,
        tk_row=row,
    )


def _texts() -> list[str]:
    rng = random.Random(0)
    alphabet = "abcdefghijklmnopqrstuvwxyzàéöçñßабвгдежзийклмнопрстуфхцчшщыэюяاحمد्हिंदी中文한국"
    noise = ["".join(rng.choices(alphabet + " .,", k=rng.randrange(1, 300))) for _ in range(30)]
    return SAMPLES + noise


def test_the_compact_automaton_ranks_exactly_as_py3langid(
    tmp_path: Path, reference: LanguageIdentifier
) -> None:
    for identifier in (load_identifier(None), load_identifier(tmp_path)):
        for text in _texts():
            assert identifier.rank(text) == reference.rank(text)


def test_the_cache_is_written_once_then_read_without_the_packaged_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_identifier(tmp_path)
    (folder,) = tmp_path.iterdir()
    assert (folder / "moves.npy").stat().st_size < 16_000_000  # py3langid's table: 39 MB

    def unavailable(path: Path) -> None:
        raise AssertionError("the packaged model was decompressed again")

    monkeypatch.setattr(language, "load_model", unavailable)
    again = load_identifier(tmp_path)
    assert [again.rank(t) for t in SAMPLES] == [first.rank(t) for t in SAMPLES]


@pytest.mark.parametrize("damage", ["truncate", "remove"])
def test_a_damaged_cache_is_dropped_and_the_model_loaded_into_memory(
    tmp_path: Path, damage: str
) -> None:
    expected = [load_identifier(None).rank(t) for t in SAMPLES]
    load_identifier(tmp_path)
    (folder,) = tmp_path.iterdir()
    if damage == "truncate":
        (folder / "moves.npy").write_bytes(b"")
    else:
        (folder / "output.npy").unlink()
    identifier = load_identifier(tmp_path)
    assert [identifier.rank(t) for t in SAMPLES] == expected
    assert not folder.exists()  # the next process writes it afresh


def test_an_unwritable_cache_falls_back_to_memory(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert load_identifier(blocked).rank(SAMPLES[0])[0][0] == "fr"
