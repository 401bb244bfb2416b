"""A report as JUnit XML, the one format every CI reads: a test suite per report, a test case per case, a failure
per finding that fails the run (the others in the case's output)."""

from __future__ import annotations

import re
from xml.etree import ElementTree

from .model import Report, Severity

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def to_junit(report: Report) -> str:
    suite = ElementTree.Element(
        "testsuite",
        name=_xml(f"rrkit {report.tool}"),
        tests=str(len(report.cases)),
        failures=str(sum(not case.ok for case in report.cases)),
        errors="0",
        skipped=str(sum(case.skipped is not None for case in report.cases)),
    )
    properties = ElementTree.SubElement(suite, "properties")
    for name, value in {"subject": report.subject, **report.properties}.items():
        ElementTree.SubElement(properties, "property", name=_xml(name), value=_xml(value))
    for case in report.cases:
        element = ElementTree.SubElement(suite, "testcase", classname=_xml(case.group), name=_xml(case.name))
        if case.file:
            element.set("file", _xml(case.file))
        notes = [case.output] if case.output else []
        if case.skipped is not None:
            ElementTree.SubElement(element, "skipped", message=_xml(case.skipped))
        for finding in case.findings:
            if finding.severity is Severity.MUST:
                message = f"{finding.rule} ({finding.strength}): {finding.evidence}"
                ElementTree.SubElement(element, "failure", message=_xml(message)).text = _xml(str(finding))
            else:
                notes.append(str(finding))
        ElementTree.SubElement(element, "system-out").text = _xml("\n".join(notes))
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True)


def _xml(text: str) -> str:
    """XML 1.0 cannot hold control characters or lone surrogates at all, not even escaped: they are written as
    Python escapes."""
    return _NOT_XML.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)
