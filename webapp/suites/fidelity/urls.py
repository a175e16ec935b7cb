from __future__ import annotations

from django.urls import path

from webapp.suites.fidelity import views as fidelity_views

app_name = "fidelity"
urlpatterns = [
    path("fidelity/", fidelity_views.runs_fidelity_page, name="runs"),
    path("fidelity/queue/", fidelity_views.proposal_queue, name="queue"),
    path("fidelity/queue/<int:proposal_id>/", fidelity_views.proposal_review, name="review"),
    path("fidelity/propose/<int:dataset_id>/<int:number>/", fidelity_views.propose_defect,
         name="propose"),
    path("<int:suite_id>/fidelity/", fidelity_views.suite_fidelity, name="suite"),
]
