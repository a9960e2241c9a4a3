"""Language identification: writing system first, py3langid within it, phrases for short texts."""

from __future__ import annotations

import pytest

from guardrail.detection.language import identify_language, script_counts


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
    ],
)
def test_replies_are_identified_in_every_supported_language(text: str, lang: str) -> None:
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
